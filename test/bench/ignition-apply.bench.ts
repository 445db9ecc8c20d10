/**
 * `winfleet-agent ignition apply` against CoreOS Ignition (fetch-offline + files,
 * Debian 2.14) on the same configs: 1,000 small files, and 100 MB of data in four
 * files. Ours is timed as the CLI (process start included, fsync on, as shipped:
 * the agent bundle, built into a scratch directory, with its code cache warm as on
 * every start but a node's first) and as the in-process engine without fsync
 * (Ignition does not fsync).
 */
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyIgnition, parseIgnition, rootedMapper } from "../../agent/ignition";
import { buildBundles } from "../../agent/release/build";
import { prepareRoot, runCoreOsIgnition } from "../ignition/coreos";
import { goal, interleavedMedianMs, report } from "./harness";
import { IGNITION, locate } from "../support";

const work = mkdtempSync(join(tmpdir(), "bench-ign-"));
// The bundle as it ships, not the checkout's bin/, which runs the TypeScript sources through tsx unless a fresh build
// is in dist/.
const agent = join(work, "dist", "agent", "bin", "winfleet-agent.js");
const agentEnv = { ...process.env, WINFLEET_CODE_CACHE: join(work, "code-cache"), WINFLEET_LAUNCH: "bundle" };
let n = 0;
const freshRoot = (): string => {
  const root = join(work, `root-${n++}`);
  prepareRoot(root);
  return root;
};

function smallFiles(count: number): string {
  const files = Array.from({ length: count }, (_, i) => {
    const data = Buffer.from(`setting-${i}=${"x".repeat(80)}\n`);
    return {
      path: `/opt/app/d${i % 20}/file-${i}.conf`,
      mode: 0o644,
      contents: {
        source: `data:,${encodeURIComponent(data.toString())}`,
        verification: { hash: `sha512-${createHash("sha512").update(data).digest("hex")}` },
      },
    };
  });
  return JSON.stringify({ ignition: { version: "3.3.0" }, storage: { files } });
}

function bigFiles(totalMb: number, parts: number): string {
  const files = Array.from({ length: parts }, (_, i) => {
    const data = randomBytes((totalMb * 1024 * 1024) / parts);
    return {
      path: `/opt/blob/part-${i}.bin`,
      contents: {
        source: `data:;base64,${data.toString("base64")}`,
        verification: { hash: `sha512-${createHash("sha512").update(data).digest("hex")}` },
      },
    };
  });
  return JSON.stringify({ ignition: { version: "3.3.0" }, storage: { files } });
}

/** Times the CLI and the engine against CoreOS Ignition on `config`; returns the CLI's ratio. */
async function compare(label: string, config: string, runs: number): Promise<number> {
  const file = join(work, `${label.replace(/\W+/g, "-")}.ign`);
  writeFileSync(file, config);
  // Each run on a fresh root made before the clock starts; the three take turns (see interleavedMedianMs).
  const roots = Array.from({ length: runs * 3 }, freshRoot);
  const [coreos = NaN, cli = NaN, engine = NaN] = await interleavedMedianMs(runs, [
    () => {
      const r = runCoreOsIgnition(config, roots.pop() ?? freshRoot());
      if (!r.ok) throw new Error(`Ignition failed: ${r.log.slice(-500)}`);
    },
    () => {
      const r = spawnSync(process.execPath, [agent, "ignition", "apply", "--root", roots.pop() ?? freshRoot(), file], {
        encoding: "utf8",
        env: agentEnv,
      });
      if (r.status !== 0) throw new Error(r.stderr);
    },
    async () => {
      const { config: parsed } = parseIgnition(config);
      await applyIgnition(parsed, { mapper: rootedMapper(roots.pop() ?? freshRoot()), durable: false });
    },
  ]);
  report(`${label} (CLI, fsync)`, { name: "winfleet", ms: cli }, { name: "coreos", ms: coreos });
  report(`${label} (engine, no fsync)`, { name: "winfleet", ms: engine }, { name: "coreos", ms: coreos });
  return cli / coreos;
}

async function main(): Promise<void> {
  if (!locate(IGNITION)) {
    console.log(`skipped: ${IGNITION.command} is not installed (${IGNITION.install})`);
    return;
  }
  try {
    await buildBundles(join(__dirname, "..", ".."), join(work, "dist"));
    // One run to write the code cache, as a node's first start does.
    const empty = join(work, "empty.ign");
    writeFileSync(empty, JSON.stringify({ ignition: { version: "3.3.0" } }));
    const warm = spawnSync(process.execPath, [agent, "ignition", "apply", "--root", freshRoot(), empty], {
      encoding: "utf8",
      env: agentEnv,
    });
    if (warm.status !== 0) throw new Error(`the bundle's ignition apply failed: ${warm.stderr}`);
    const small = await compare("1,000 small files", smallFiles(1000), 9);
    // The CLI pays for its process start and fsyncs every file; CoreOS Ignition syncs nothing.
    goal(
      "ignition apply, 1,000 small files",
      `CLI with fsync ${small.toFixed(2)}x CoreOS Ignition`,
      "<= 1.0x CoreOS Ignition",
      small <= 1.0,
    );
    await compare("100 MB in 4 files", bigFiles(100, 4), 3);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
