/**
 * A signed release for tests: two keys made by `winfleet keys generate` (the
 * fleet's and another) and a real `winfleet release` of the shipped content
 * signed with the fleet's, in a scratch directory; the CLIs run to completion
 * there; and `winfleet-agent serve` run until its log says enough.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pollUntil } from "./wait";

/** The repository's root. */
export const REPO = join(__dirname, "..", "..");

/** What a finished CLI run printed. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `bin/<bin>.js <args>` in `cwd` to completion (bounded: two minutes). */
export function runCli(bin: "winfleet" | "winfleet-agent", args: readonly string[], cwd = REPO): CliRun {
  const r = spawnSync(process.execPath, [join(REPO, "bin", `${bin}.js`), ...args], {
    cwd,
    encoding: "utf8",
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The keys and the release `signedRelease` made. */
export interface SignedRelease {
  /** The release's directory: `agent/` and `content/`, signed with the fleet's key. */
  readonly release: string;
  /** The fleet's public key file, and its private key's text. */
  readonly pub: string;
  readonly fleetKey: string;
  /** Another key pair's public key file and private key's text. */
  readonly otherPub: string;
  readonly otherKey: string;
  /** What `winfleet release` printed. */
  readonly stdout: string;
}

/** Generates the fleet's and another key in `scratch`, and releases the shipped content signed with the fleet's. */
export function signedRelease(scratch: string): SignedRelease {
  for (const name of ["fleet", "other"]) {
    const r = runCli("winfleet", ["keys", "generate", "--out", join(scratch, name)], scratch);
    assert.equal(r.code, 0, r.stderr);
  }
  const release = join(scratch, "release");
  const r = runCli(
    "winfleet",
    ["release", "--out", release, "--key", join(scratch, "fleet.key"), "--content", join(REPO, "content")],
    scratch,
  );
  assert.equal(r.code, 0, r.stderr);
  return {
    release,
    pub: join(scratch, "fleet.pub"),
    fleetKey: readFileSync(join(scratch, "fleet.key"), "utf8"),
    otherPub: join(scratch, "other.pub"),
    otherKey: readFileSync(join(scratch, "other.key"), "utf8"),
    stdout: r.stdout,
  };
}

/** Where and how `up` installs, as the release tests run it: the pid-file manager, optionally a pinned key. */
export interface UpTarget {
  readonly installDir: string;
  /** The broker config the agent is started with. */
  readonly config: string;
  readonly publicKey?: string;
}

/** `winfleet-agent up --bundle BUNDLE` with `target`'s options, then `extra`. */
export function upArgs(bundle: string, target: UpTarget, extra: readonly string[] = []): string[] {
  return [
    "up",
    "--bundle",
    bundle,
    "--install-dir",
    target.installDir,
    "--config",
    target.config,
    "--manager",
    "pidfile",
    ...(target.publicKey !== undefined ? ["--public-key", target.publicKey] : []),
    ...extra,
  ];
}

/**
 * Runs `winfleet-agent serve --config FILE` until `done(stderr)` or its exit (bounded: 30 s), stops it (SIGTERM), and
 * returns its stderr.
 */
export async function serveUntil(config: string, done: (stderr: string) => boolean): Promise<string> {
  const child = spawn(process.execPath, [join(REPO, "bin", "winfleet-agent.js"), "serve", "--config", config], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  await pollUntil(() => done(stderr) || child.exitCode !== null, 30_000, 100);
  // Closed, not just exited: the last of its log is read.
  const closed = new Promise((resolve) => child.once("close", resolve));
  child.kill();
  await closed;
  return stderr;
}
