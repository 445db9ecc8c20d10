/**
 * Which of a node's pods a drain evicts, the way `kubectl drain` decides (its filters, in its
 * order): DaemonSet pods and mirror pods stay; pods that use emptyDir data, or that no
 * controller manages, stop the drain unless `deleteEmptyDirData` or `force` allows them (a
 * finished pod is always fine); pods the selector leaves out are not looked at. Pure, and the
 * texts people read about the pods in a drain's way.
 */
import type { DrainSettings } from "../common";

/** A pod bound to the node, as far as the drain reads it. */
export interface DrainPod {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** It has a deletion timestamp: on its way out, only waited for. */
  readonly deleting: boolean;
  readonly phase: string;
  /** A static pod's mirror (`kubernetes.io/config.mirror`): the kubelet's, not the API server's. */
  readonly mirror: boolean;
  /** Its controller (the owner reference with `controller: true`), if any. */
  readonly controller?: { readonly kind: string; readonly name: string };
  /** It mounts an emptyDir volume, whose data is lost with it. */
  readonly emptyDir: boolean;
}

/** What the drain does with a pod. */
export type PodVerdict =
  | { readonly kind: "evict" }
  | { readonly kind: "stay"; readonly why: string }
  | { readonly kind: "refuse"; readonly why: string };

/** `namespace/name`. */
export const podName = (p: Pick<DrainPod, "namespace" | "name">): string => `${p.namespace}/${p.name}`;

/** kubectl drain's verdict on one pod (with `--ignore-daemonsets`, which a node's own upgrader needs). */
export function podVerdict(pod: DrainPod, settings: Pick<DrainSettings, "deleteEmptyDirData" | "force">): PodVerdict {
  const finished = pod.phase === "Succeeded" || pod.phase === "Failed";
  if (pod.controller?.kind === "DaemonSet") return { kind: "stay", why: "a DaemonSet pod" };
  if (pod.mirror) return { kind: "stay", why: "a mirror pod" };
  if (pod.deleting || finished) return { kind: "evict" };
  if (pod.emptyDir && !settings.deleteEmptyDirData)
    return { kind: "refuse", why: "uses emptyDir data, lost with it (drain.deleteEmptyDirData allows it)" };
  if (!pod.controller && !settings.force)
    return { kind: "refuse", why: "declares no controller, so nothing brings it back (drain.force allows it)" };
  return { kind: "evict" };
}

/** Why a pod is still in a drain's way. */
export interface Waiting {
  readonly pod: string;
  readonly why: string;
}

/** The pods still in the way, for an Event or a failure message: `ns/a (PodDisruptionBudget ns/b: …); ns/c (…)`. */
export function waitingText(waiting: readonly Waiting[], limit = 10): string {
  const listed = waiting.slice(0, limit).map((w) => `${w.pod} (${w.why})`);
  const more = waiting.length > limit ? `, and ${waiting.length - limit} more` : "";
  return `${listed.join("; ")}${more}`;
}

/**
 * The budgets an eviction refusal names: the API server answers 429 with causes such as "The
 * disruption budget web-pdb needs 5 healthy pods and has 5 currently".
 */
export function budgetsNamed(messages: readonly string[]): string[] {
  const out = new Set<string>();
  for (const m of messages)
    for (const match of m.matchAll(/disruption budget (\S+?)(?=\s|$)/g)) out.add(match[1] ?? "");
  return [...out].filter((b) => b !== "");
}
