/**
 * The local fleet's rollout in cluster mode: the stack's spec is deployed to the cluster side, the
 * DaemonSet controller moves the hosts (`maxUnavailable` at a time, in its own order), and the
 * fleet only watches each host's agent until it converged or failed.
 */
import type { HostOutcome, RolloutResult } from "./rollout";
import type { FleetSpec } from "./spec";

/** A host the rollout must move, and how to watch it. */
export interface WatchedHost {
  readonly name: string;
  /** Resolves once the host's agent converged to the target or failed; with a failure at once when `stop` aborts. */
  readonly watch: (stop: AbortSignal) => Promise<HostOutcome>;
}

/** What {@link rollThroughCluster} works with. */
export interface ClusterRolloutArgs {
  readonly spec: FleetSpec;
  readonly pending: readonly WatchedHost[];
  /** Deploys `spec` to the cluster side (the stack update that changes the upgrader DaemonSets). */
  readonly deploy: (spec: FleetSpec) => Promise<void>;
  /** Resolves once the upgrader DaemonSets have rolled (every pod updated and available). */
  readonly settled: ((signal: AbortSignal) => Promise<void>) | undefined;
  /** A host converged to the target. */
  readonly converged: (host: string) => void;
  readonly signal: AbortSignal;
}

/**
 * Deploys the spec, then watches each pending host as the upgrader pods move it. The first failure halts the
 * rollout, as the DaemonSet controller stops there: the hosts not converged yet are reported as not started. Once
 * every host converged, the rollout is done when the DaemonSets settle too, so the next one starts from pods that are
 * all available.
 */
export async function rollThroughCluster(args: ClusterRolloutArgs): Promise<RolloutResult> {
  const { pending } = args;
  const done: string[] = [];
  // Once the rollout has an outcome (or the fleet stops), the watches still waiting end with it:
  // a halted rollout never moves the hosts they wait for. Each watch starts before the deploy moves its host.
  const finished = new AbortController();
  const stop = AbortSignal.any([args.signal, finished.signal]);
  const watches = pending.map((h) => h.watch(stop).then((o) => ({ host: h.name, o })));
  try {
    await args.deploy(args.spec);
  } catch (e) {
    finished.abort();
    return {
      kind: "halted",
      host: "(cluster)",
      step: "pulumi up",
      error: String(e instanceof Error ? e.message : e),
      done,
      untouched: pending.map((h) => h.name),
    };
  }
  const outcome = new Promise<RolloutResult>((resolve) => {
    let left = watches.length;
    for (const w of watches) {
      void w.then(({ host, o }) => {
        if (!o.ok) {
          resolve({
            kind: "halted",
            host,
            step: o.step,
            error: o.error,
            done: [...done],
            untouched: pending.map((h) => h.name).filter((n) => n !== host && !done.includes(n)),
          });
          return;
        }
        args.converged(host);
        done.push(host);
        if (--left === 0) void settle(args, done).then(resolve);
      });
    }
  });
  try {
    return await outcome;
  } finally {
    finished.abort();
  }
}

async function settle(args: ClusterRolloutArgs, done: readonly string[]): Promise<RolloutResult> {
  try {
    await args.settled?.(args.signal);
    return { kind: "done", hosts: [...done] };
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    return {
      kind: "halted",
      host: "(cluster)",
      step: "upgrader DaemonSet rollout",
      error,
      done: [...done],
      untouched: [],
    };
  }
}
