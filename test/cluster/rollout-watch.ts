/**
 * What the fault tests read of a local cluster while a rollout runs and after it: the upgrader DaemonSet's counts,
 * the Nodes' conditions and reports, each host's Events against its agent's own log, the processes of the control
 * plane and the agents, and a host's disk.
 */
import { readFileSync, readdirSync, statSync, statfsSync } from "node:fs";
import { join } from "node:path";
import type { KubeClient } from "../../agent/cluster/kube-client";
import type { LifecycleEvent } from "../../agent/lifecycle";
import { eventReport } from "../../agent/report/reports";
import { hostPaths } from "../../agent/fleet/spec";
import { processesMentioning } from "../fleet/support";
import { sleep } from "../support";

export const DAEMONSET = "/apis/apps/v1/namespaces/winfleet-system/daemonsets/winfleet-agent-upgrader-local";

/** The DaemonSet's rollout counts. */
export interface DaemonSetStatus {
  readonly metadata: { generation: number };
  readonly status: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberAvailable?: number;
    numberUnavailable?: number;
  };
}

type Condition = { type: string; status: string };
/** A Node as the tests read it. */
export interface NodeView {
  readonly name: string;
  readonly ready: string;
  readonly winfleetReady: string;
  readonly version: string;
  readonly state: string;
}

/** Every Node's Ready, WinfleetReady and the template version and state its agent reported. */
export async function nodes(kube: KubeClient): Promise<NodeView[]> {
  const list = await kube.get<{
    items: { metadata: { name: string; annotations?: Record<string, string> }; status: { conditions?: Condition[] } }[];
  }>("/api/v1/nodes");
  const status = (cs: Condition[] | undefined, type: string) => cs?.find((c) => c.type === type)?.status ?? "-";
  return list.items
    .map((n) => ({
      name: n.metadata.name,
      ready: status(n.status.conditions, "Ready"),
      winfleetReady: status(n.status.conditions, "WinfleetReady"),
      version: n.metadata.annotations?.["winfleet.io/template-version"] ?? "-",
      state: n.metadata.annotations?.["winfleet.io/state"] ?? "-",
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Samples the DaemonSet every 250 ms until stopped: the most pods it ever counted unavailable while rolling a template
 * newer than the one it had when the watch began (its counts of the template before are another rollout's).
 */
export async function watchUnavailable(
  kube: KubeClient,
): Promise<{ stop(): Promise<{ worst: number; samples: string[] }> }> {
  const before = (await kube.get<DaemonSetStatus>(DAEMONSET)).metadata.generation;
  let watching = true;
  let worst = 0;
  const samples: string[] = [];
  const loop = (async () => {
    while (watching) {
      const d = await kube.getOrUndefined<DaemonSetStatus>(DAEMONSET).catch(() => undefined);
      if (d && d.metadata.generation > before && d.status.observedGeneration === d.metadata.generation) {
        const unavailable = d.status.numberUnavailable ?? 0;
        worst = Math.max(worst, unavailable);
        const sample = `${d.status.updatedNumberScheduled ?? 0}u/${unavailable}x`;
        if (samples.at(-1) !== sample) samples.push(sample);
      }
      await sleep(250);
    }
  })();
  return {
    async stop() {
      watching = false;
      await loop;
      return { worst, samples };
    },
  };
}

/** The DaemonSet's counts in a line: generations, updated, available and unavailable pods. */
export function describeDaemonSet(d: DaemonSetStatus | undefined): string {
  if (!d) return "no DaemonSet";
  const s = d.status;
  return `generation ${d.metadata.generation} (observed ${s.observedGeneration ?? "-"}): ${s.updatedNumberScheduled ?? 0} updated, ${s.numberAvailable ?? 0} available, ${s.numberUnavailable ?? 0} unavailable of ${s.desiredNumberScheduled ?? 0}`;
}

/** Polls the DaemonSet until `ok` holds; a timeout says what it last looked like. */
async function waitForDaemonSet(
  kube: KubeClient,
  ok: (d: DaemonSetStatus) => boolean,
  timeoutMs: number,
  what: string,
): Promise<void> {
  let last: DaemonSetStatus | undefined;
  await kube
    .waitFor(
      async () => {
        const d = await kube.getOrUndefined<DaemonSetStatus>(DAEMONSET).catch(() => undefined);
        last = d ?? last;
        return d !== undefined && ok(d);
      },
      timeoutMs,
      what,
    )
    .catch((e: unknown) => {
      throw new Error(`${String(e)}; last seen: ${describeDaemonSet(last)}`);
    });
}

/**
 * Resolves once the DaemonSet's controller has begun rolling a template newer than generation `after` (a pod of it
 * exists) but not finished.
 */
export async function midRollout(kube: KubeClient, after: number, hosts: number, timeoutMs = 240_000): Promise<void> {
  await waitForDaemonSet(
    kube,
    (d) => {
      if (d.metadata.generation <= after || d.status.observedGeneration !== d.metadata.generation) return false;
      const updated = d.status.updatedNumberScheduled ?? 0;
      return updated >= 1 && updated < hosts;
    },
    timeoutMs,
    "the DaemonSet controller to be rolling the new template",
  );
}

/** The DaemonSet's generation now. */
export async function generation(kube: KubeClient): Promise<number> {
  return (await kube.get<DaemonSetStatus>(DAEMONSET)).metadata.generation;
}

/** Resolves once the controller has rolled the DaemonSet's current template to every one of `hosts`, all available. */
export async function rolledOut(kube: KubeClient, hosts: number, timeoutMs = 60_000): Promise<void> {
  await waitForDaemonSet(
    kube,
    ({ metadata, status: s }) =>
      s.observedGeneration === metadata.generation &&
      s.updatedNumberScheduled === hosts &&
      s.numberAvailable === hosts &&
      (s.numberUnavailable ?? 0) === 0,
    timeoutMs,
    `the DaemonSet to be rolled out to ${hosts} hosts`,
  );
}

/** The pids of processes whose command line mentions every one of `needles`. */
export function pidsOf(...needles: string[]): number[] {
  const [first = "", ...rest] = needles;
  return processesMentioning(first)
    .filter((line) => rest.every((n) => line.includes(n)))
    .map((line) => Number(line.split(" ")[0]));
}

/** A host's agent (`winfleet-agent serve`, the leader of its process group). */
export function agentPid(stateDir: string, host: string): number | undefined {
  return pidsOf(hostPaths(stateDir, host).config, "serve")[0];
}

/** The Event reasons a host's agent logged since `offset` bytes into its log, counted. */
export function loggedReports(stateDir: string, host: string, offset: number): Record<string, number> {
  const counts: Record<string, number> = {};
  const text = readFileSync(hostPaths(stateDir, host).log, "utf8").slice(offset);
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let raw: { event?: string; type?: string };
    try {
      raw = JSON.parse(line) as { event?: string; type?: string };
    } catch {
      continue;
    }
    const report = eventReport({ ...raw, type: raw.event ?? raw.type } as LifecycleEvent);
    if (report) counts[report.reason] = (counts[report.reason] ?? 0) + 1;
  }
  return counts;
}

/** The size of each host's agent log now: reports logged past it are compared with the Events. */
export function logOffsets(stateDir: string, hosts: readonly string[]): Record<string, number> {
  return Object.fromEntries(hosts.map((h) => [h, statSync(hostPaths(stateDir, h).log).size]));
}

/** The Events on a host's Node, counted by reason (an Event's count included). */
export async function postedReports(kube: KubeClient, host: string): Promise<Record<string, number>> {
  const events = await kube.get<{ items: { reason: string; count?: number; source?: { component?: string } }[] }>(
    `/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${host}`)}`,
  );
  const counts: Record<string, number> = {};
  for (const e of events.items) {
    if (e.source?.component !== "winfleet-agent") continue;
    counts[e.reason] = (counts[e.reason] ?? 0) + (e.count ?? 1);
  }
  return counts;
}

/** Reports still waiting in a host's queue on disk. */
export function queued(stateDir: string, host: string): string[] {
  try {
    return readdirSync(join(hostPaths(stateDir, host).root, ".winfleet", "report-queue")).filter((n) =>
      n.startsWith("r-"),
    );
  } catch {
    return [];
  }
}

/** Free bytes on the file system holding `path`. */
export function freeBytes(path: string): number {
  const s = statfsSync(path);
  return s.bavail * s.bsize;
}
