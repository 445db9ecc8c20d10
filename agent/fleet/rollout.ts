/**
 * Rolling a change through a fleet the way the upgrader DaemonSets roll it
 * through a cluster: at most `maxUnavailable` hosts converge at once, a host
 * counts as available again only when its agent reports the new target
 * applied, and the first failure halts the rollout — no further host is
 * started, and the result names the host, the step and the error.
 */
import type { LifecycleEvent, TemplateRef } from "../lifecycle";

/** How one host's move to the target ended. */
export type HostOutcome = { readonly ok: true } | { readonly ok: false; readonly step: string; readonly error: string };

/** A host as the rollout sees it. */
export interface RolloutHost {
  readonly name: string;
  /** Moves the host to the target and resolves when it converged or failed. */
  apply(): Promise<HostOutcome>;
}

/** How a rollout ended. */
export type RolloutResult =
  | { readonly kind: "done"; readonly hosts: readonly string[] }
  | {
      readonly kind: "halted";
      readonly host: string;
      readonly step: string;
      readonly error: string;
      readonly done: readonly string[];
      readonly untouched: readonly string[];
    }
  | { readonly kind: "cancelled"; readonly done: readonly string[]; readonly untouched: readonly string[] };

/** Rolls `hosts` (in order), at most `maxUnavailable` at a time. */
export async function rollOut(
  hosts: readonly RolloutHost[],
  maxUnavailable: number,
  options: { signal?: AbortSignal; onStart?: (host: string) => void } = {},
): Promise<RolloutResult> {
  const width = Math.max(1, Math.floor(maxUnavailable));
  const queue = [...hosts];
  const done: string[] = [];
  let halted: { host: string; step: string; error: string } | undefined;
  const lane = async (): Promise<void> => {
    while (queue.length > 0 && !halted && !options.signal?.aborted) {
      const host = queue.shift() as RolloutHost;
      options.onStart?.(host.name);
      const outcome = await host.apply();
      if (outcome.ok) done.push(host.name);
      else halted ??= { host: host.name, step: outcome.step, error: outcome.error };
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, hosts.length) }, lane));
  const untouched = queue.map((h) => h.name);
  if (halted) return { kind: "halted", ...halted, done, untouched };
  if (options.signal?.aborted && untouched.length > 0) return { kind: "cancelled", done, untouched };
  return { kind: "done", hosts: done };
}

/** The template a rollout moves a host to, by name and version. */
export interface TargetTemplate {
  readonly template: string;
  readonly templateVersion: string;
}

/**
 * Reads one host's lifecycle events for a rollout to `target`: the host's outcome once it is
 * known, undefined until then. Only a run of the target counts: an agent still retrying the
 * previous target (its timer can fire after the rollout began) fails that run, not this rollout.
 */
export function outcomeWatcher(target: TargetTemplate): (e: LifecycleEvent) => HostOutcome | undefined {
  let applyingTarget = false;
  const isTarget = (t: TemplateRef): boolean => isTemplate(t, target);
  return (e) => {
    if (e.type === "apply-started") applyingTarget = isTarget(e.template);
    else if (e.type === "apply-converged" && isTarget(e.template)) return { ok: true };
    else if (e.type === "apply-failed" && applyingTarget) {
      const tail = e.errorTail.trim();
      return {
        ok: false,
        step: `${e.component} ${e.phase}: ${e.command}`,
        error: `exit ${String(e.exitCode)}${tail ? `: ${tail.split("\n").slice(-3).join(" | ")}` : ""}`,
      };
    }
    return undefined;
  };
}

/**
 * Whether `e` starts a host's convergence timeout in a rollout to `target` that something else paces (the DaemonSet
 * controller, in its own order): the host's first run of the target. Waiting for its turn is not the host's delay;
 * at `maxUnavailable: 1` the last of 50 hosts waits many minutes for it.
 */
export function startsHostTimeout(target: TargetTemplate, e: LifecycleEvent): boolean {
  return e.type === "apply-started" && isTemplate(e.template, target);
}

function isTemplate(t: TemplateRef, target: TargetTemplate): boolean {
  return t.name === target.template && t.version === target.templateVersion;
}
