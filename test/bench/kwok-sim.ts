/**
 * A pool of simulated Windows nodes for the scale benchmark: kwok (built by set-up) plays the kubelets of a thousand
 * Nodes against the real control plane — their Leases, and the upgrader pods' lifecycle through the Stages below —
 * while winfleet's side of each node, the reports its agent writes, comes from the agent's own Reporter, one per node,
 * in this one process, with each node's own credential from TLS bootstrap.
 *
 * The upgrader pods keep winfleet's contract: a pod turns Ready only once its host has converged, after a time drawn
 * from a seeded hash of the node's number (the same one the simulated agent converges by), and never on the chosen
 * few, whose agents report a failed apply instead.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { KubeClient } from "../../agent/cluster/kube-client";
import type { Logger } from "../../agent/common";
import type { LifecycleEvent } from "../../agent/lifecycle";
import { nodeApiFromKubeconfig } from "../../agent/report/node-api";
import { Reporter } from "../../agent/report/reporter";

/** kwok's own Stages for a Node's start and its heartbeat with a Lease, from its Go module (set-up downloaded it). */
export function kwokNodeStages(version: string): string[] {
  const r = spawnSync("go", ["mod", "download", "-json", `sigs.k8s.io/kwok@${version}`], { encoding: "utf8" });
  const dir = (JSON.parse(r.stdout) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`the kwok module ${version} is not in the Go module cache: run npm run setup`);
  return [
    join(dir, "kustomize", "stage", "node", "fast", "node-initialize.yaml"),
    join(dir, "kustomize", "stage", "node", "heartbeat-with-lease", "node-heartbeat-with-lease.yaml"),
  ].map((f) => readFileSync(f, "utf8"));
}

/** The simulated nodes' names, as the pool `sim` names its hosts: `sim-1`… */
export const simName = (i: number): string => `sim-${i}`;

/** How long node `i` takes to converge, in ms: a hash of its number and the seed, between `base` and `base+spread`. */
export function convergeMs(i: number, seed: number, base: number, spread: number): number {
  return base + ((((i * 7919 + seed) * 104729) % 1_000_003) % spread);
}

/** The same hash as a jq expression over a pod, for kwok's Stage: the delay string it reads. */
function convergeJq(seed: number, base: number, spread: number, marginMs: number): string {
  return `.spec.nodeName | ltrimstr("sim-") | tonumber | ((((. * 7919 + ${seed}) * 104729) % 1000003) % ${spread} + ${base + marginMs}) | tostring + "ms"`;
}

const podStatus = (ready: boolean) => `
{{ $now := Now }}
phase: Running
hostIP: "127.0.0.1"
podIP: "127.0.0.1"
startTime: {{ $now | Quote }}
conditions:
- { type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }} }
- { type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }} }
- { type: ContainersReady, status: "${ready ? "True" : "False"}", lastTransitionTime: {{ $now | Quote }} }
- { type: Ready, status: "${ready ? "True" : "False"}", lastTransitionTime: {{ $now | Quote }} }
initContainerStatuses:
{{ range .spec.initContainers }}
- { name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: true, restartCount: 0, state: { terminated: { exitCode: 0, reason: Completed } } }
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- { name: {{ .name | Quote }}, image: {{ .image | Quote }}, ready: ${ready}, started: true, restartCount: 0, state: { running: { startedAt: {{ $now | Quote }} } } }
{{ end }}
`;

/**
 * The upgrader pods' Stages: running (its init container, the retarget, done) at once; Ready once converged; and,
 * deleted, gone at once, as a kubelet whose container exits on SIGTERM removes it (kwok's own waits out the grace
 * period, 30 s a pod, which would pace the rollout instead of the hosts).
 */
export function upgraderStages(o: { seed: number; base: number; spread: number; never: readonly string[] }): string[] {
  const onSim = { key: ".spec.nodeName", operator: "Exists" };
  const stage = (name: string, spec: Record<string, unknown>) =>
    stringify({ apiVersion: "kwok.x-k8s.io/v1alpha1", kind: "Stage", metadata: { name }, spec });
  return [
    stage("winfleet-upgrader-running", {
      resourceRef: { apiGroup: "v1", kind: "Pod" },
      selector: {
        matchExpressions: [
          onSim,
          { key: ".metadata.deletionTimestamp", operator: "DoesNotExist" },
          { key: ".status.podIP", operator: "DoesNotExist" },
        ],
      },
      delay: { durationMilliseconds: 500 },
      next: { statusTemplate: podStatus(false) },
    }),
    stage("winfleet-upgrader-ready", {
      resourceRef: { apiGroup: "v1", kind: "Pod" },
      selector: {
        matchExpressions: [
          onSim,
          { key: ".metadata.deletionTimestamp", operator: "DoesNotExist" },
          { key: ".status.phase", operator: "In", values: ["Running"] },
          { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: "In", values: ["False"] },
          ...(o.never.length > 0 ? [{ key: ".spec.nodeName", operator: "NotIn", values: [...o.never] }] : []),
        ],
      },
      // A second after the simulated agent converged: Ready follows convergence, never precedes it.
      delay: {
        durationMilliseconds: o.base,
        durationFrom: { expressionFrom: convergeJq(o.seed, o.base, o.spread, 1000) },
      },
      next: { statusTemplate: podStatus(true) },
    }),
    stage("winfleet-upgrader-deleted", {
      resourceRef: { apiGroup: "v1", kind: "Pod" },
      selector: {
        matchExpressions: [
          onSim,
          { key: ".metadata.deletionTimestamp", operator: "Exists" },
          { key: ".metadata.finalizers", operator: "DoesNotExist" },
        ],
      },
      next: { delete: true },
    }),
  ];
}

/** Starts kwok managing the nodes labelled `winfleet.io/sim=true`, with `stages`; its output goes to `log`. */
export function startKwok(
  binary: string,
  kubeconfig: string,
  dir: string,
  stages: readonly string[],
  port: number,
): ChildProcess {
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "stages.yaml");
  writeFileSync(config, stages.join("\n---\n"));
  return spawn(
    binary,
    [
      `--kubeconfig=${kubeconfig}`,
      `--config=${config}`,
      "--manage-all-nodes=false",
      "--manage-nodes-with-label-selector=winfleet.io/sim=true",
      "--node-lease-duration-seconds=40",
      "--node-ip=127.0.0.1",
      `--server-address=127.0.0.1:${port}`,
    ],
    { stdio: ["ignore", "ignore", "ignore"] },
  );
}

const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/** One simulated node's agent: the real Reporter, fed the lifecycle events an agent's apply emits. */
export class SimulatedAgent {
  readonly reporter: Reporter;
  version: string;
  private moving: NodeJS.Timeout | undefined;

  constructor(
    readonly index: number,
    readonly kubeconfig: string,
    dir: string,
    version: string,
  ) {
    this.version = version;
    this.reporter = new Reporter({
      api: () => nodeApiFromKubeconfig(kubeconfig, 30_000),
      nodeName: simName(index),
      namespace: "default",
      queueDir: join(dir, "report-queue"),
      queueLimit: 1000,
      eventsPerSecond: 1,
      burst: 25,
      maxBackoffMs: 30_000,
      stopTimeoutMs: 5_000,
      log: quiet,
    });
    this.reporter.start();
  }

  private emit(e: Record<string, unknown>): void {
    this.reporter.event({ at: new Date().toISOString(), ...e } as unknown as LifecycleEvent);
  }

  private state(state: "converged" | "applying" | "failed", version: string): void {
    this.emit({
      type: "state",
      state,
      template: { name: "svc", version },
      components: [{ name: "app", version, state: "installed" }],
      agentVersion: "sim",
    });
  }

  /** As an agent's start on a converged host: the no-op apply and the state. */
  started(): void {
    this.emit({ type: "apply-started", template: { name: "svc", version: this.version }, steps: 0, resumed: false });
    this.emit({ type: "apply-converged", template: { name: "svc", version: this.version }, changed: false });
    this.state("converged", this.version);
  }

  /** An upgrader pod asked for `version`: apply, then converge after `ms` (or fail, on a chosen node). */
  retarget(version: string, ms: number, fails: boolean): void {
    if (version === this.version || this.moving) return;
    const from = this.version;
    this.emit({ type: "apply-started", template: { name: "svc", version }, steps: 2, resumed: false });
    this.state("applying", from);
    this.moving = setTimeout(() => {
      this.moving = undefined;
      if (fails) {
        this.emit({
          type: "apply-failed",
          component: "app",
          phase: "pre_upgrade",
          command: "upgrade.ps1",
          exitCode: 1,
          errorTail: "simulated failure on a chosen node",
        });
        this.state("failed", from);
        return;
      }
      this.version = version;
      this.emit({ type: "component-upgraded", component: "app", from, to: version });
      this.emit({ type: "apply-converged", template: { name: "svc", version }, changed: true });
      this.state("converged", version);
    }, ms);
  }

  async stop(): Promise<void> {
    if (this.moving) clearTimeout(this.moving);
    await this.reporter.stop();
  }
}

/** The template version an upgrader pod moves its host to (its init container's `--template-version`). */
export function podTarget(pod: { spec: { initContainers?: { command?: string[] }[] } }): string | undefined {
  const cmd = pod.spec.initContainers?.[0]?.command ?? [];
  const i = cmd.indexOf("--template-version");
  return i >= 0 ? cmd[i + 1] : undefined;
}

/** One sample of the API server's own `/metrics`: each series' labels and value. */
export type Metrics = { readonly name: string; readonly labels: Record<string, string>; readonly value: number }[];

/** Scrapes the API server's `/metrics` (an administrator may read it). */
export async function scrape(admin: KubeClient): Promise<Metrics> {
  const out: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of (await admin.text("/metrics")).split("\n")) {
    const m = /^(apiserver_request_total|apiserver_request_duration_seconds_bucket)\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)) labels[l[1] ?? ""] = l[2] ?? "";
    out.push({ name: m[1] ?? "", labels, value: Number(m[3]) });
  }
  return out;
}

const key = (s: Metrics[number]) => `${s.name}${JSON.stringify(s.labels)}`;

/** What changed between two samples, series by series. */
export function delta(before: Metrics, after: Metrics): Metrics {
  const base = new Map(before.map((s) => [key(s), s.value]));
  return after.map((s) => ({ ...s, value: s.value - (base.get(key(s)) ?? 0) })).filter((s) => s.value > 0);
}

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE", "APPLY", "CREATE", "UPDATE"]);

/** Writes by resource (and subresource), from `apiserver_request_total`. */
export function writesByResource(d: Metrics): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of d) {
    if (s.name !== "apiserver_request_total" || !MUTATING.has(s.labels.verb ?? "")) continue;
    const r = `${s.labels.verb} ${s.labels.resource ?? ""}${s.labels.subresource ? `/${s.labels.subresource}` : ""}`;
    out[r] = (out[r] ?? 0) + s.value;
  }
  return out;
}

/** The p99 of mutating requests' latency, from the API server's histogram (its bucket bound, in seconds). */
export function mutatingP99(d: Metrics): { p99: number; count: number } {
  const buckets = new Map<number, number>();
  for (const s of d) {
    if (s.name !== "apiserver_request_duration_seconds_bucket" || !MUTATING.has(s.labels.verb ?? "")) continue;
    // Long-running requests (watches) are not in the SLO.
    if (s.labels.verb === "WATCH" || s.labels.verb === "CONNECT") continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const count = sorted.at(-1)?.[1] ?? 0;
  const p99 = sorted.find(([, n]) => n >= count * 0.99)?.[0] ?? NaN;
  return { p99, count };
}

export { KubeClient };
