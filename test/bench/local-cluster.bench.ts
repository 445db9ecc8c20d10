/**
 * The local fleet in cluster mode, timed as a user meets it: `winfleet local up --cluster` (the
 * operator bundle built for the run) from start to the control plane ready, to every host joined,
 * and to every host converged, for 3 and 10 hosts; and the same fleet without --cluster in the
 * same run, as the floor the cluster's share is measured against; and, for 3 hosts, a version
 * bump rolled through the DaemonSet controller, per host.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import "./harness";
import { runCommand } from "../support";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-local-cluster-"));

/** `npm run build`: the bundles the launcher then runs (WINFLEET_LAUNCH=bundle refuses a stale one). */
function build(): void {
  const r = spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "inherit" });
  if (r.status !== 0) throw new Error("the bundle build failed");
}

interface Marks {
  readonly controlPlane: number;
  readonly joined: number;
  readonly converged: number;
}

function writeFleet(stack: string, hosts: number, version: string): void {
  writeFileSync(
    stack,
    `config:\n  winfleet:fleet:\n    content: { dir: ${join(REPO, "content")}, template: sandbox, templateVersion: ${version} }\n    pools:\n      - { name: local, kind: local, hosts: ${hosts}, maxUnavailable: 1 }\n`,
  );
}

/**
 * Up to convergence, then (in cluster mode, when `bump`) a version bump through the DaemonSet controller, then down.
 */
async function upAndDown(hosts: number, cluster: boolean, bump = false): Promise<Marks & { rollout?: number }> {
  const stack = join(work, `Pulumi.b${hosts}.yaml`);
  writeFleet(stack, hosts, "1.0.0");
  const state = join(work, `state-${hosts}-${cluster}`);
  const t0 = performance.now();
  const marks: Record<string, number> = {};
  const child = spawn(
    process.execPath,
    [
      join(REPO, "bin", "winfleet.js"),
      "local",
      "up",
      "--stack",
      stack,
      "--state-dir",
      state,
      "--port",
      "0",
      ...(cluster ? ["--cluster"] : []),
    ],
    { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString();
      if (!marks.controlPlane && /control plane ready/.test(out)) marks.controlPlane = performance.now() - t0;
      if (!marks.joined && /hosts joined by TLS bootstrap/.test(out)) marks.joined = performance.now() - t0;
      if (/rollout done/.test(out)) {
        marks.converged = performance.now() - t0;
        resolve();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => reject(new Error(`local up exited ${code}:\n${out}`)));
  });
  let rollout: number | undefined;
  if (bump) {
    // The controller rolls only pods that have been available for minReadySeconds: let the fleet settle first.
    await new Promise((r) => setTimeout(r, 15_000));
    writeFleet(stack, hosts, "1.1.0");
    const t = performance.now();
    // Asynchronously: the running fleet keeps writing to the pipe this process reads.
    const r = await runCommand(
      process.execPath,
      [join(REPO, "bin", "winfleet.js"), "local", "up", "--cluster", "--stack", stack, "--state-dir", state],
      { cwd: REPO, timeoutMs: 600_000 },
    );
    if (r.code !== 0) throw new Error(`the bump failed:\n${r.stdout}${r.stderr}`);
    rollout = performance.now() - t;
  }
  spawnSync(process.execPath, [join(REPO, "bin", "winfleet.js"), "local", "down", "--state-dir", state], { cwd: REPO });
  return {
    controlPlane: marks.controlPlane ?? NaN,
    joined: marks.joined ?? NaN,
    converged: marks.converged ?? NaN,
    ...(rollout !== undefined ? { rollout } : {}),
  };
}

void (async () => {
  try {
    build();
    process.env.WINFLEET_LAUNCH = "bundle";
    for (const hosts of [3, 10]) {
      const plain = await upAndDown(hosts, false);
      const cluster = await upAndDown(hosts, true, hosts === 3);
      const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
      const roll =
        cluster.rollout !== undefined
          ? ` | a version bump through the DaemonSet controller ${s(cluster.rollout)}, ${s(cluster.rollout / hosts)} per host (minReadySeconds 10 s each)`
          : "";
      console.log(
        `${String(hosts).padStart(2)} hosts | --cluster: control plane ${s(cluster.controlPlane)}, joined ${s(cluster.joined)}, converged ${s(cluster.converged)} | without: converged ${s(plain.converged)} | the cluster adds ${s(cluster.converged - plain.converged)} (goal: 3 hosts Ready within 90 s)${roll}`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
})().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
