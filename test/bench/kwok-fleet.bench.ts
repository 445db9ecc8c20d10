/**
 * A thousand simulated Windows nodes (`WINFLEET_SIM_NODES`) against the real control plane: each joins by TLS bootstrap
 * with the bootstrap token the stack's real Pulumi program made, kwok plays their kubelets (Leases, the upgrader pods'
 * lifecycle), and each node's reports come from the agent's own Reporter (kwok-sim.ts). Measured: the join; the
 * steady-state writes per node per minute by resource, from the API server's own counters, against the Leases'; a
 * version bump rolled by the DaemonSet controller at maxUnavailable 10% and 25% against the floor
 * ceil(N / width) × (converge + minReadySeconds), and at 1 over two minutes, projected; the mutating requests' p99
 * latency during each rollout against the scalability SLO (1 s); and a bump that never turns Ready on a chosen few,
 * which must halt within maxUnavailable.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import "./harness";
import { goal } from "./harness";
import { startControlPlane, type ControlPlane } from "../../agent/cluster/control-plane";
import { findEngines } from "../../agent/cluster/engines";
import { tlsBootstrap } from "../../agent/cluster/node-stand-in";
import { runNodeApprover } from "../../agent/cluster/node-approver";
import { LOCAL_NAMESPACE, LOCAL_STACK, deployClusterSide } from "../../agent/fleet/cluster";
import { NODE_NAMES_CONFIGMAP, renderBootstrapToken } from "../../components/cluster-render";
import type { FleetSpec } from "../../agent/fleet/spec";
import { POOL_LABEL, STACK_LABEL, stackSlug } from "../../components";
import { freePort, writeContent } from "../support";
import {
  KubeClient,
  type Metrics,
  SimulatedAgent,
  convergeMs,
  delta,
  kwokNodeStages,
  mutatingP99,
  podTarget,
  scrape,
  simName,
  startKwok,
  upgraderStages,
  writesByResource,
} from "./kwok-sim";

const N = Number(process.env.WINFLEET_SIM_NODES ?? 1000);
const SEED = Number(process.env.WINFLEET_SIM_SEED ?? 20261127);
const BASE_MS = 2000;
const SPREAD_MS = 6000;
const MIN_READY_S = 10;
const DS = "/apis/apps/v1/namespaces/winfleet-system/daemonsets/winfleet-agent-upgrader-sim";
const work = mkdtempSync(join(tmpdir(), "bench-kwok-"));
const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const log = (line: string) => console.log(`  ${line}`);

type Ds = { metadata: { generation: number }; status: Record<string, number | undefined> };

async function main(): Promise<void> {
  const engines = findEngines(["kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes", "kwok"]);
  const k8s = engines.kubernetes?.binaries ?? {};
  console.log(
    `kwok fleet: ${N} simulated nodes, seed ${SEED} (WINFLEET_SIM_SEED), converge ${BASE_MS}–${BASE_MS + SPREAD_MS} ms`,
  );
  const cp: ControlPlane = await startControlPlane({
    dir: join(work, "cp"),
    binaries: {
      etcd: engines.etcd?.binaries.etcd ?? "",
      kubeApiserver: k8s["kube-apiserver"] ?? "",
      kubeControllerManager: k8s["kube-controller-manager"] ?? "",
      kubeScheduler: k8s["kube-scheduler"] ?? "",
    },
    log,
  });
  const admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
  const agents: SimulatedAgent[] = [];
  const kwoks: { kill(): boolean }[] = [];
  const approving = new AbortController();
  try {
    const versions = [1, 2, 3, 4, 5, 6];
    const content = writeContent(
      versions.map((v) => ({ name: "app", version: String(v), metadata: { install: { commands: ["true"] } } })),
      versions.map((v) => ({ name: "svc", version: String(v), packages: [`app_${v}`] })),
      join(work, "content"),
    );
    const stackFile = join(work, "Pulumi.sim.yaml");
    const specFor = (version: number, width: string): FleetSpec => {
      writeFileSync(
        stackFile,
        `config:\n  winfleet:fleet:\n    content: { dir: ${content}, template: svc, templateVersion: "${version}" }\n    pools:\n      - { name: sim, kind: local, hosts: 1 }\n    upgrader: { image: "winfleet-agent:sim", maxUnavailable: ${width.endsWith("%") ? `"${width}"` : width} }\n`,
      );
      const spec = { stack: "sim", stackFile, pool: "sim", hosts: 1, maxUnavailable: 1, content, cluster: true };
      return { ...spec, template: "svc", templateVersion: String(version) };
    };
    let t = performance.now();
    const side = await deployClusterSide(specFor(1, "10%"), cp, join(work, "cluster"), log);
    console.log(`cluster side deployed by pulumi up in ${s(performance.now() - t)}`);
    // A local pool holds at most 50 real hosts; a pool of N is a cloud pool's size, whose nodes join with its one
    // token (as a scale set's do). The benchmark makes that token as the program renders one, and names its nodes
    // in the approver's ConfigMap, which the program's next deploy rewrites (the nodes have joined by then).
    const simToken = { id: "simpol", secret: "k8s0sim0bench000" };
    await admin.post(
      "/api/v1/namespaces/kube-system/secrets",
      renderBootstrapToken(
        {
          ...simToken,
          expiration: new Date(Date.now() + 86_400_000).toISOString(),
          pool: "sim",
          stack: LOCAL_STACK,
        },
        "the kwok benchmark's simulated pool",
      ),
    );
    const names = Array.from({ length: N }, (_, k) => simName(k + 1));
    await admin.patch(`/api/v1/namespaces/${LOCAL_NAMESPACE}/configmaps/${NODE_NAMES_CONFIGMAP}`, {
      data: { [simToken.id]: JSON.stringify({ pool: "sim", names }) },
    });
    // winfleet's approver signs each node's first certificate for the name its token was made for, as in any cluster.
    void runNodeApprover(admin, LOCAL_NAMESPACE, {
      signal: approving.signal,
      intervalMs: 500,
      onError: (e) => log(`node approver: ${String(e)}`),
    });

    // Join: TLS bootstrap, then each node registers its own Node, as a kubelet does.
    t = performance.now();
    const kubeconfigs: string[] = [];
    const labels = {
      "kubernetes.io/os": "windows",
      [POOL_LABEL]: "sim",
      [STACK_LABEL]: stackSlug(LOCAL_STACK),
      "winfleet.io/sim": "true",
    };
    for (let next = 1; next <= N;) {
      const batch = Array.from({ length: Math.min(25, N - next + 1) }, (_, k) => next + k);
      next += batch.length;
      await Promise.all(
        batch.map(async (i) => {
          const name = simName(i);
          const c = await tlsBootstrap({
            server: cp.server,
            caPem: cp.caPem,
            bootstrapToken: `${simToken.id}.${simToken.secret}`,
            nodeName: name,
            labels,
            dir: join(work, "nodes", name),
          });
          const node = new KubeClient(cp.server, { ca: cp.caPem, cert: c.certPem, key: c.keyPem });
          await node.post("/api/v1/nodes", {
            apiVersion: "v1",
            kind: "Node",
            metadata: { name, labels: { ...labels, "kubernetes.io/hostname": name } },
          });
          kubeconfigs[i] = c.kubeconfig;
        }),
      );
    }
    const joinMs = performance.now() - t;
    console.log(`${N} nodes joined by TLS bootstrap in ${s(joinMs)} (${(joinMs / N).toFixed(0)} ms each)`);

    const kwokBin = engines.kwok?.binaries.kwok ?? "";
    const nodeStages = kwokNodeStages(engines.kwok?.version ?? "");
    const runKwok = async (never: readonly string[]) =>
      kwoks.push(
        startKwok(
          kwokBin,
          cp.adminKubeconfig,
          join(work, "kwok"),
          [...nodeStages, ...upgraderStages({ seed: SEED, base: BASE_MS, spread: SPREAD_MS, never })],
          await freePort(),
        ),
      );
    await runKwok([]);
    for (let i = 1; i <= N; i++) {
      const a = new SimulatedAgent(i, kubeconfigs[i] ?? "", join(work, "nodes", simName(i)), "1");
      agents.push(a);
      a.started();
    }
    let never = new Set<string>();
    const watching = new AbortController();
    const watchPods = async () => {
      let version = (
        await admin.get<{ metadata: { resourceVersion: string } }>("/api/v1/namespaces/winfleet-system/pods")
      ).metadata.resourceVersion;
      while (!watching.signal.aborted) {
        version = await admin
          .watchOnce<{
            metadata: { deletionTimestamp?: string };
            spec: { nodeName?: string; initContainers?: { command?: string[] }[] };
          }>(
            "/api/v1/namespaces/winfleet-system/pods",
            version,
            (type, pod) => {
              const node = pod.spec.nodeName ?? "";
              const i = Number(node.replace(/^sim-/, ""));
              const target = podTarget(pod);
              if (type === "DELETED" || pod.metadata.deletionTimestamp || !target || !agents[i - 1]) return;
              agents[i - 1]?.retarget(target, convergeMs(i, SEED, BASE_MS, SPREAD_MS), never.has(node));
            },
            watching.signal,
          )
          .catch(async () => {
            await new Promise((r) => setTimeout(r, 1000));
            return (
              await admin.get<{ metadata: { resourceVersion: string } }>("/api/v1/namespaces/winfleet-system/pods")
            ).metadata.resourceVersion;
          });
      }
    };
    const watcher = watchPods();
    const settled = async (timeoutMs: number) =>
      admin.waitFor(
        async () => {
          const d = await admin.get<Ds>(DS);
          return d.status.observedGeneration === d.metadata.generation &&
            d.status.updatedNumberScheduled === N &&
            d.status.numberAvailable === N
            ? d
            : undefined;
        },
        timeoutMs,
        "every upgrader pod updated and available",
      );
    t = performance.now();
    await settled(900_000);
    const reporting = () => agents.reduce((n, a) => n + a.reporter.queued, 0);
    await admin.waitFor(() => Promise.resolve(reporting() === 0 || undefined), 300_000, "every report sent");
    console.log(
      `every node Ready with its upgrader pod available and its reports sent: ${s(performance.now() - t)} after kwok started`,
    );

    // At rest: one minute of the API server's own write counters.
    const m0 = await scrape(admin);
    await new Promise((r) => setTimeout(r, 60_000));
    const rest = writesByResource(delta(m0, await scrape(admin)));
    const perNodeMin = (k: string[]) => k.reduce((n, x) => n + (rest[x] ?? 0), 0) / N;
    const leases = perNodeMin(["PUT leases", "PATCH leases"]);
    // Each annotation patch of the agent's comes with a patch of its condition (nodes/status, which kwok writes too).
    const winfleet = perNodeMin(["POST events", "PATCH nodes", "PATCH nodes"]);
    console.log(`writes at rest in one minute, all ${N} nodes, by resource: ${JSON.stringify(rest)}`);
    goal(
      `winfleet's writes at rest per node per minute (Events, Node annotations and condition; ${N} nodes)`,
      `${winfleet.toFixed(3)}, Lease renewals ${leases.toFixed(2)}`,
      "≤ the Lease renewals' rate",
      winfleet <= leases,
    );

    const roll = async (version: number, width: string, limitMs?: number) => {
      const before = await scrape(admin);
      const t0 = performance.now();
      await side.deploy(specFor(version, width));
      let done: Ds | undefined;
      const d = await admin
        .waitFor(
          async () => {
            const x = await admin.get<Ds>(DS);
            done = x;
            return x.status.observedGeneration === x.metadata.generation &&
              x.status.updatedNumberScheduled === N &&
              x.status.numberAvailable === N
              ? x
              : undefined;
          },
          limitMs ?? 1_800_000,
          "the rollout",
        )
        .catch(() => undefined);
      const ms = performance.now() - t0;
      const latency = mutatingP99(delta(before, await scrape(admin)));
      return { ms, finished: d !== undefined, updated: done?.status.updatedNumberScheduled ?? 0, latency };
    };
    const meanConverge = BASE_MS + SPREAD_MS / 2 + 1500;
    let version = 1;
    for (const [width, w] of [
      ["10%", Math.ceil(N / 10)],
      ["25%", Math.ceil(N / 4)],
    ] as const) {
      const r = await roll(++version, width);
      const floor = Math.ceil(N / w) * (meanConverge + MIN_READY_S * 1000);
      goal(
        `rollout of ${N} simulated nodes at maxUnavailable ${width}`,
        `${s(r.ms)}`,
        `floor ${s(floor)} (≤ 1.5×: ${(r.ms / floor).toFixed(2)}×)`,
        r.ms <= floor * 1.5,
      );
      goal(
        `mutating API p99 during that rollout (${r.latency.count} requests)`,
        `≤ ${r.latency.p99} s`,
        "≤ 1 s (scalability SLO)",
        r.latency.p99 <= 1,
      );
    }
    const slow = await roll(++version, "1", 120_000);
    const perNode = slow.ms / Math.max(1, slow.updated);
    console.log(
      `maxUnavailable 1: ${slow.updated} of ${N} nodes in ${s(slow.ms)}, ${s(perNode)} each; projected for ${N}: ${s(perNode * N)} (floor ${s(N * (meanConverge + MIN_READY_S * 1000))})`,
    );

    // That rollout would take hours at width 1: it finishes at full width before the next bump, and before the chosen
    // few are chosen, or their pods of this version would never turn Ready either and it would never finish.
    await side.deploy(specFor(version, "100%"));
    await settled(900_000);

    // A bump that never turns Ready on a chosen few halts within maxUnavailable. Their pods of this version stay
    // Ready under the new kwok: its Ready stage only moves pods that are not Ready yet.
    kwoks.splice(0).forEach((k) => k.kill());
    never = new Set([simName(7), simName(Math.ceil(N / 2)), simName(N - 3)]);
    await runKwok([...never]);
    const halted = await roll(++version, "10%", 240_000);
    const d = await admin.get<Ds>(DS);
    goal(
      `a bump never Ready on ${never.size} chosen nodes halts within maxUnavailable (10%)`,
      `finished ${String(halted.finished)}, unavailable ${d.status.numberUnavailable ?? 0}, updated ${d.status.updatedNumberScheduled ?? 0}`,
      `not finished, ≤ ${Math.ceil(N / 10)} unavailable`,
      !halted.finished && (d.status.numberUnavailable ?? 0) <= Math.ceil(N / 10),
    );
    watching.abort();
    await watcher;
  } finally {
    approving.abort();
    for (const k of kwoks) k.kill();
    await Promise.all(agents.map((a) => a.stop()));
    await cp.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});

export type { Metrics };
