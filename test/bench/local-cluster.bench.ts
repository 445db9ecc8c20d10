/**
 * The local fleet in cluster mode at scale, timed as a user meets it: `winfleet local up --cluster` (the operator
 * bundle built for the run) from start to the control plane ready, every host joined and every host converged, for
 * 10, 25 and 50 real hosts (`WINFLEET_BENCH_HOSTS`); the memory each host costs once settled; the API server's
 * writes per node per minute at rest, from its own counters; and, on the largest fleet, version bumps rolled by the
 * DaemonSet controller at maxUnavailable 10%, 25% and 1, each watched so that never more than maxUnavailable hosts
 * are unavailable, against the floor ceil(N / width) × (converge + minReadySeconds).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import "./harness";
import { goal } from "./harness";
import { KubeClient } from "../../agent/cluster/kube-client";
import { runCommand, writeContent } from "../support";
import { delta, scrape, writesByResource } from "./kwok-sim";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-local-cluster-"));
const SIZES = (process.env.WINFLEET_BENCH_HOSTS ?? "10,25,50").split(",").map(Number);
const WIDTHS = (process.env.WINFLEET_BENCH_WIDTHS ?? "10%,25%,1").split(",");
const MIN_READY_S = 10;
const DS = "/apis/apps/v1/namespaces/winfleet-system/daemonsets/winfleet-agent-upgrader-local";
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

/** `npm run build`: the bundles the launcher then runs (WINFLEET_LAUNCH=bundle refuses a stale one). */
function build(): void {
  const r = spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "inherit" });
  if (r.status !== 0) throw new Error("the bundle build failed");
}

const versions = [1, 2, 3, 4, 5];
const content = writeContent(
  versions.map((v) => ({
    name: "app",
    version: String(v),
    metadata: { install: { commands: ["sleep 0.5"] }, pre_upgrade: { commands: ["sleep 0.5"] } },
  })),
  versions.map((v) => ({ name: "svc", version: String(v), packages: [`app_${v}`] })),
  join(work, "content"),
);

function writeFleet(stack: string, hosts: number, version: number, width: string): void {
  writeFileSync(
    stack,
    `config:\n  winfleet:fleet:\n    content: { dir: ${content}, template: svc, templateVersion: "${version}" }\n    pools:\n      - { name: local, kind: local, hosts: ${hosts} }\n    upgrader: { image: "winfleet-agent:local", maxUnavailable: ${width.endsWith("%") ? `"${width}"` : width} }\n`,
  );
}

/** Resident memory (kB) of the processes whose command line mentions `needle`, by kind. */
function memory(needle: string, fleetPid: number): Record<string, { count: number; kb: number }> {
  const out: Record<string, { count: number; kb: number }> = {};
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (!cmd.join(" ").includes(needle) && Number(pid) !== fleetPid) continue;
      const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
      const kind =
        Number(pid) === fleetPid
          ? "fleet"
          : cmd.includes("serve")
            ? "agent"
            : (["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"].find((b) =>
                (cmd[0] ?? "").endsWith(b),
              ) ?? "pods");
      const k = (out[kind] ??= { count: 0, kb: 0 });
      k.count++;
      k.kb += kb;
    } catch {
      // gone
    }
  }
  return out;
}

type Ds = { metadata: { generation: number }; status: Record<string, number | undefined> };

async function fleetOf(hosts: number): Promise<void> {
  const stack = join(work, `Pulumi.b${hosts}.yaml`);
  const state = join(work, `state-${hosts}`);
  writeFleet(stack, hosts, 1, "10%");
  const t0 = performance.now();
  const marks: Record<string, number> = {};
  const child = spawn(
    process.execPath,
    [
      join(REPO, "bin", "winfleet.js"),
      "local",
      "up",
      "--cluster",
      "--stack",
      stack,
      "--state-dir",
      state,
      "--port",
      "0",
    ],
    { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  try {
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
      child.once("exit", (code) => reject(new Error(`local up exited ${code}:\n${out.slice(-4000)}`)));
    });
    const kube = KubeClient.fromKubeconfigFile(join(state, "kubeconfig"));
    const settled = () =>
      kube.waitFor(
        async () => {
          const d = await kube.get<Ds>(DS);
          return d.status.observedGeneration === d.metadata.generation &&
            d.status.updatedNumberScheduled === hosts &&
            d.status.numberAvailable === hosts
            ? d
            : undefined;
        },
        1_800_000,
        "every upgrader pod available",
      );
    await settled();
    const ready = performance.now() - t0;
    console.log(
      `${String(hosts).padStart(2)} hosts | control plane ${s(marks.controlPlane ?? NaN)}, joined ${s(marks.joined ?? NaN)}, converged ${s(marks.converged ?? NaN)}, every upgrader pod available ${s(ready)}`,
    );
    await new Promise((r) => setTimeout(r, 20_000));
    const mem = memory(state, child.pid ?? 0);
    const total = Object.values(mem).reduce((n, m) => n + m.kb, 0);
    const parts = Object.entries(mem)
      .map(([k, m]) => `${k} ${m.count}× ${mb(m.kb)}`)
      .join(", ");
    console.log(
      `   memory settled: ${mb(total)} in all, ${mb(total / hosts)} per host (${parts}; agent ${mb((mem.agent?.kb ?? 0) / hosts)} each)`,
    );
    const m0 = await scrape(kube);
    await new Promise((r) => setTimeout(r, 60_000));
    const rest = writesByResource(delta(m0, await scrape(kube)));
    const per = (k: string[]) => k.reduce((n, x) => n + (rest[x] ?? 0), 0) / hosts;
    console.log(`   writes at rest in one minute, all ${hosts} nodes: ${JSON.stringify(rest)}`);
    goal(
      `winfleet's writes at rest per node per minute, ${hosts} real hosts (Events, Node annotations and condition)`,
      `${per(["POST events", "PATCH nodes", "PATCH nodes"]).toFixed(3)}, Lease renewals ${per(["PUT leases", "PATCH leases"]).toFixed(2)}`,
      "≤ the Lease renewals' rate",
      per(["POST events", "PATCH nodes", "PATCH nodes"]) <= per(["PUT leases", "PATCH leases"]),
    );
    if (hosts !== Math.max(...SIZES)) return;
    let version = 1;
    for (const width of WIDTHS) {
      writeFleet(stack, hosts, ++version, width);
      // The DaemonSet controller rounds a percentage up (a Deployment's maxUnavailable rounds down).
      const w = width.endsWith("%")
        ? Math.max(1, Math.ceil((hosts * Number(width.slice(0, -1))) / 100))
        : Number(width);
      let worst = 0;
      let watching = true;
      const watch = (async () => {
        while (watching) {
          const d = await kube.get<Ds>(DS).catch(() => undefined);
          worst = Math.max(worst, d?.status.numberUnavailable ?? 0);
          await new Promise((r) => setTimeout(r, 250));
        }
      })();
      const t = performance.now();
      const r = await runCommand(
        process.execPath,
        [join(REPO, "bin", "winfleet.js"), "local", "up", "--cluster", "--stack", stack, "--state-dir", state],
        { cwd: REPO, timeoutMs: 3_600_000 },
      );
      await settled();
      const ms = performance.now() - t;
      watching = false;
      await watch;
      if (r.code !== 0) throw new Error(`the bump failed:\n${r.stdout}${r.stderr}`);
      const pods = await kube.get<{
        items: {
          metadata: { creationTimestamp: string };
          status: { conditions?: { type: string; lastTransitionTime: string }[] };
        }[];
      }>("/api/v1/namespaces/winfleet-system/pods");
      const toReady = pods.items
        .map(
          (p) =>
            Date.parse(p.status.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime ?? "") -
            Date.parse(p.metadata.creationTimestamp),
        )
        .filter((x) => Number.isFinite(x))
        .sort((a, b) => a - b);
      const converge = toReady[Math.floor(toReady.length / 2)] ?? NaN;
      const floor = Math.ceil(hosts / w) * (converge + MIN_READY_S * 1000);
      goal(
        `${hosts} real hosts, maxUnavailable ${width}: never more than ${w} unavailable`,
        `at most ${worst}`,
        `≤ ${w}`,
        worst <= w,
      );
      goal(
        `${hosts} real hosts, rollout at maxUnavailable ${width}`,
        `${s(ms)} (a pod's creation to Ready, median ${s(converge)})`,
        `floor ${s(floor)}, ≤ 1.5×: ${(ms / floor).toFixed(2)}×`,
        ms <= floor * 1.5,
      );
    }
  } finally {
    spawnSync(process.execPath, [join(REPO, "bin", "winfleet.js"), "local", "down", "--state-dir", state], {
      cwd: REPO,
    });
    child.kill("SIGKILL");
  }
}

void (async () => {
  try {
    build();
    process.env.WINFLEET_LAUNCH = "bundle";
    for (const hosts of SIZES) await fleetOf(hosts);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
})().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
