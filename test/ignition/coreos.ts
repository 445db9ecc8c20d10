/**
 * Drives the real CoreOS Ignition binaries: `ignition-validate`, and the
 * `fetch-offline` then `files` stages with the `file` platform against a root
 * directory, as a machine's first boot runs them, so the differential tests
 * compare our apply with Ignition's own.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { IGNITION, IGNITION_VALIDATE, tempDir } from "../support";

/** The result of running Ignition. */
export interface CoreOsRun {
  readonly ok: boolean;
  readonly log: string;
}

/** What Ignition (etc/) and our ledger (.winfleet/) leave in a root; generated configs never write there. */
export const IGNITION_OWN_FILES = ["etc", ".winfleet"];

let shim: string | undefined;
// Ignition's files stage ends by relabelling for SELinux through `setfiles`;
// the root declares SELinux disabled-but-typed, and this stand-in accepts the list.
function setfilesShim(): string {
  if (shim === undefined) {
    shim = tempDir("winfleet-setfiles-");
    writeFileSync(join(shim, "setfiles"), "#!/bin/sh\ncat >/dev/null\nexit 0\n");
    chmodSync(join(shim, "setfiles"), 0o755);
  }
  return shim;
}

/** Gives a fresh root what Ignition's relabel step reads. */
export function prepareRoot(root: string): void {
  mkdirSync(join(root, "etc", "selinux"), { recursive: true });
  writeFileSync(join(root, "etc", "selinux", "config"), "SELINUX=disabled\nSELINUXTYPE=targeted\n");
}

/** Runs fetch-offline then files on `config` against `root` (already prepared). */
export function runCoreOsIgnition(config: string, root: string): CoreOsRun {
  const work = tempDir("winfleet-coreos-");
  try {
    const configFile = join(work, "config.ign");
    writeFileSync(configFile, config);
    const env = {
      ...process.env,
      IGNITION_CONFIG_FILE: configFile,
      PATH: `${setfilesShim()}:${process.env.PATH ?? ""}`,
    };
    const common = [
      "-platform",
      "file",
      "-root",
      root,
      "-config-cache",
      join(work, "cache.json"),
      "-state-file",
      join(work, "state"),
      "-log-to-stdout",
    ];
    let log = "";
    for (const stage of ["fetch-offline", "files"]) {
      const extra = stage === "fetch-offline" ? ["-neednet", join(work, "neednet")] : [];
      const r = spawnSync(IGNITION.command, ["-stage", stage, ...common, ...extra], {
        env,
        encoding: "utf8",
        timeout: 60_000,
      });
      log += r.stdout + r.stderr;
      if (r.status !== 0) return { ok: false, log };
    }
    return { ok: true, log };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Runs `ignition-validate`; ok when it exits 0. */
export function runIgnitionValidate(config: string): CoreOsRun {
  const work = tempDir("winfleet-validate-");
  try {
    const file = join(work, "config.ign");
    writeFileSync(file, config);
    const r = spawnSync(IGNITION_VALIDATE.command, [file], { encoding: "utf8", timeout: 30_000 });
    return { ok: r.status === 0, log: r.stdout + r.stderr };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
