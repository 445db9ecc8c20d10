/**
 * What draining costs a rollout: `winfleet local up --cluster` with 3 sandbox nodes and a
 * Deployment of 30 pods (10 per node as it starts, no budget), rolling a version whose upgrade
 * disrupts the runtime three times in the same fleet — drain off, on, off — so a machine that
 * warms up or slows down weighs on both. Reported: each rollout's wall time, from `local up` to
 * "rollout done"; and, from each host's journal, the drain's own steps (cordon to drained, and
 * converged to uncordoned), which is the drain's whole overhead on that host.
 */
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { report } from "./harness";
import { KubeClient } from "../../agent/cluster/kube-client";
import { hostPaths } from "../../agent/fleet/spec";
import { runCommand } from "../support";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-drain-"));
const HOSTS = ["local-1", "local-2", "local-3"];
const PODS = 30;
const stack = join(work, "Pulumi.bench.yaml");
const state = join(work, "state");

let running = false;

/** `winfleet local down`: also when the benchmark fails, so nothing it started is left running. */
function down(): void {
  if (!running) return;
  running = false;
  spawnSync(process.execPath, [join(REPO, "bin", "winfleet.js"), "local", "down", "--state-dir", state], {
    cwd: REPO,
    stdio: "inherit",
  });
}

function build(): void {
  const r = spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "inherit" });
  if (r.status !== 0) throw new Error("the bundle build failed");
}

/** The checkout's content with `n` more versions of the sandbox whose upgrade disrupts (sandbox-service bumped). */
function content(n: number): string {
  const dir = join(work, "content");
  cpSync(join(REPO, "content"), dir, { recursive: true });
  const service = join(dir, "components", "sandbox-service");
  const base = JSON.parse(readFileSync(join(dir, "templates", "sandbox-1.2.0.json"), "utf8")) as {
    version: string;
    packages: string[];
  };
  for (let i = 1; i <= n; i++) {
    const v = `1.${1 + i}.0`;
    cpSync(join(service, "1.1.0"), join(service, v), { recursive: true });
    const meta = join(service, v, "metadata.json");
    writeFileSync(meta, readFileSync(meta, "utf8").replace('"version": "1.1.0"', `"version": "${v}"`));
    const template = {
      ...base,
      version: `1.${2 + i}.0`,
      packages: base.packages.map((p) => p.replace("sandbox-service_1.1.0", `sandbox-service_${v}`)),
    };
    writeFileSync(join(dir, "templates", `sandbox-${template.version}.json`), JSON.stringify(template));
  }
  return dir;
}

function writeFleet(stack: string, dir: string, version: string, drain: boolean): void {
  writeFileSync(
    stack,
    `config:\n  winfleet:fleet:\n    content: { dir: ${dir}, template: sandbox, templateVersion: ${version} }\n    pools:\n      - { name: local, kind: local, hosts: ${HOSTS.length}, maxUnavailable: 1, drain: { enabled: ${drain} } }\n`,
  );
}

/** Each host's drain steps in its last rollout (journal history): cordon to drained, converged to uncordoned. */
function drainSteps(state: string): { host: string; drain: number; uncordon: number; evicted: number }[] {
  return HOSTS.map((host) => {
    const journal = JSON.parse(
      readFileSync(join(hostPaths(state, host).root, ".winfleet", "journal.json"), "utf8"),
    ) as {
      history: { at: string; event: string }[];
    };
    const h = journal.history;
    const last = (event: string) => h.findLast((e) => e.event === event)?.at;
    const t = (at: string | undefined) => (at ? Date.parse(at) : NaN);
    const started = t(last("drain-started"));
    return {
      host,
      drain: (t(last("drained")) - started) / 1000,
      uncordon: (t(last("uncordoned")) - t(h.findLast((e) => e.event === "converged")?.at)) / 1000,
      evicted: h.filter((e) => e.event === "pod-evicted" && t(e.at) >= started).length,
    };
  });
}

void (async () => {
  try {
    build();
    process.env.WINFLEET_LAUNCH = "bundle";
    const dir = content(2);
    writeFleet(stack, dir, "1.1.0", true);
    const up = spawn(
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
    running = true;
    const exited = new Promise<void>((resolve) => up.once("exit", () => resolve()));
    await new Promise<void>((resolve, reject) => {
      let out = "";
      const onData = (c: Buffer): void => {
        out += c.toString();
        if (/rollout done/.test(out)) resolve();
      };
      up.stdout.on("data", onData);
      up.stderr.on("data", onData);
      up.once("exit", (code) => reject(new Error(`local up exited ${code}:\n${out}`)));
    });
    const kube = KubeClient.fromKubeconfigFile(join(state, "kubeconfig"));
    await kube.post("/apis/apps/v1/namespaces/default/deployments", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: "default" },
      spec: {
        replicas: PODS,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: {
            terminationGracePeriodSeconds: 5,
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: "kubernetes.io/hostname",
                whenUnsatisfiable: "ScheduleAnyway",
                labelSelector: { matchLabels: { app: "web" } },
              },
            ],
            containers: [
              {
                name: "web",
                image: "sandbox",
                command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"],
              },
            ],
          },
        },
      },
    });
    const readyPods = async (): Promise<number> =>
      (
        await kube.get<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>(
          "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb",
        )
      ).items.filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")).length;
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 300 && (await readyPods()) < PODS; i++) await new Promise((r) => setTimeout(r, 1000));
      // The DaemonSet controller rolls only pods available for minReadySeconds.
      await new Promise((r) => setTimeout(r, 15_000));
    };
    const roll = async (version: string, drain: boolean): Promise<number> => {
      await settle();
      writeFleet(stack, dir, version, drain);
      const t = performance.now();
      const r = await runCommand(
        process.execPath,
        [join(REPO, "bin", "winfleet.js"), "local", "up", "--cluster", "--stack", stack, "--state-dir", state],
        { cwd: REPO, timeoutMs: 1_800_000 },
      );
      if (r.code !== 0) throw new Error(`the rollout of ${version} failed:\n${r.stdout}${r.stderr}`);
      return performance.now() - t;
    };
    const off1 = await roll("1.2.0", false);
    const on = await roll("1.3.0", true);
    const steps = drainSteps(state);
    const off2 = await roll("1.4.0", false);
    const off = (off1 + off2) / 2;
    console.log(
      `a 3-node rollout of a version that disrupts the runtime, ${PODS} pods (${PODS / HOSTS.length} per node at the start), no budget:`,
    );
    report("rollout, drain on vs off", { name: "on", ms: on }, { name: "off (mean of 2)", ms: off });
    console.log(
      `  drain off ${(off1 / 1000).toFixed(1)} s and ${(off2 / 1000).toFixed(1)} s; the drain adds ${((on - off) / 1000 / HOSTS.length).toFixed(1)} s per node`,
    );
    for (const s of steps)
      console.log(
        `  ${s.host}: cordon to drained ${s.drain.toFixed(1)} s (${s.evicted} pods evicted), converged to uncordoned ${s.uncordon.toFixed(1)} s`,
      );
    down();
    await exited;
  } finally {
    down();
    rmSync(work, { recursive: true, force: true });
  }
})().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
