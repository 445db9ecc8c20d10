/**
 * What the lifecycle engine's events become on the Node: the Event reasons and
 * messages people read in `kubectl describe node`, and the desired annotations
 * and `WinfleetReady` condition derived from the agent's state. Pure: no clock,
 * no I/O, so the mapping is one table a reviewer can read.
 */
import { type AgentState, type DriftItem, type LifecycleEvent, type TemplateRef, waitingText } from "../lifecycle";

/** Event reasons, CamelCase as Kubernetes reasons are. */
export const REASONS = {
  applyStarted: "ApplyStarted",
  componentInstalled: "ComponentInstalled",
  componentUpgraded: "ComponentUpgraded",
  componentRemoved: "ComponentRemoved",
  rebootRequired: "RebootRequired",
  rebooted: "Rebooted",
  applyFailed: "ApplyFailed",
  converged: "Converged",
  driftFound: "DriftFound",
  driftCorrected: "DriftCorrected",
  serviceDown: "NodeServiceDown",
  serviceRestored: "NodeServiceRestored",
  downgradeAllowed: "DowngradeAllowed",
  drainStarted: "DrainStarted",
  podEvicted: "PodEvicted",
  drainBlocked: "DrainBlocked",
  drainFinished: "DrainFinished",
  drainFailed: "DrainFailed",
  uncordoned: "Uncordoned",
  leftCordoned: "LeftCordoned",
  /** Reports folded together because the on-disk queue was full. */
  summarized: "ReportsSummarized",
} as const;

/** One of {@link REASONS}. */
export type Reason = (typeof REASONS)[keyof typeof REASONS];

/** A Kubernetes Event to be, before it has a name or a Node. */
export interface EventReport {
  readonly type: "Normal" | "Warning";
  readonly reason: Reason;
  readonly message: string;
  /** When it happened (ISO-8601). */
  readonly at: string;
}

/** The annotations the agent keeps on its Node. */
export const ANNOTATIONS = {
  state: "winfleet.io/state",
  template: "winfleet.io/template",
  templateVersion: "winfleet.io/template-version",
  components: "winfleet.io/components",
  contentDigest: "winfleet.io/content-digest",
  agentVersion: "winfleet.io/agent-version",
} as const;

/** The Node condition the agent owns. */
export const CONDITION_TYPE = "WinfleetReady";

/** The longest Event message the API server takes (`events.k8s.io` note limit; core Events share storage). */
export const MESSAGE_LIMIT = 1024;

/** How many drifted paths a message names before it says "and N more". */
const DRIFT_LISTED = 10;

/** Cuts text to `limit` UTF-8 bytes without splitting a character, marking the cut. */
export function truncateUtf8(text: string, limit = MESSAGE_LIMIT): string {
  if (Buffer.byteLength(text, "utf8") <= limit) return text;
  const marker = " …";
  let out = "";
  let bytes = Buffer.byteLength(marker, "utf8");
  for (const ch of text) {
    const n = Buffer.byteLength(ch, "utf8");
    if (bytes + n > limit) break;
    out += ch;
    bytes += n;
  }
  return out + marker;
}

const templateText = (t: TemplateRef): string => `${t.name}@${t.version}`;

function driftText(items: readonly DriftItem[]): string {
  const listed = items.slice(0, DRIFT_LISTED).map((i) => `${i.path} (${i.problem}, ${i.component})`);
  const more = items.length > DRIFT_LISTED ? `, and ${items.length - DRIFT_LISTED} more` : "";
  return `${items.length} applied file${items.length === 1 ? "" : "s"} drifted: ${listed.join(", ")}${more}`;
}

/**
 * The Event a lifecycle event becomes, or undefined for those that are not
 * reported as Events: step progress (dozens per apply, it would bury the rest)
 * and `state` (which becomes annotations and the condition instead).
 */
export function eventReport(e: LifecycleEvent): EventReport | undefined {
  const r = (type: EventReport["type"], reason: Reason, message: string): EventReport => ({
    type,
    reason,
    message: truncateUtf8(message),
    at: e.at,
  });
  switch (e.type) {
    case "apply-started":
      return r(
        "Normal",
        REASONS.applyStarted,
        `Applying template ${templateText(e.template)}: ${e.steps} step${e.steps === 1 ? "" : "s"}${e.resumed ? ", resuming an interrupted apply" : ""}`,
      );
    case "component-installed":
      return r("Normal", REASONS.componentInstalled, `Installed ${e.component} ${e.version}`);
    case "component-upgraded":
      return r("Normal", REASONS.componentUpgraded, `Upgraded ${e.component} from ${e.from} to ${e.to}`);
    case "component-removed":
      return r("Normal", REASONS.componentRemoved, `Removed ${e.component} ${e.version}`);
    case "reboot-required":
      return r(
        "Normal",
        REASONS.rebootRequired,
        `Restarting the host: ${e.reasons.length > 0 ? e.reasons.join("; ") : "a step asked for it"}`,
      );
    case "reboot-done":
      return r("Normal", REASONS.rebooted, "The host restarted; the apply continues");
    case "apply-failed":
      return r("Warning", REASONS.applyFailed, failureText(e));
    case "apply-converged":
      return r(
        "Normal",
        REASONS.converged,
        `Converged to template ${templateText(e.template)}${e.changed ? "" : " (no changes)"}`,
      );
    case "drift-found":
      return r("Warning", REASONS.driftFound, driftText(e.items));
    case "drift-corrected":
      return r("Normal", REASONS.driftCorrected, `Re-applied ${e.components.join(", ")}`);
    case "service-down":
      return r(
        "Warning",
        REASONS.serviceDown,
        `Node services down: ${e.items.map((i) => `${i.service} ${i.problem} (${i.component})`).join(", ")}`,
      );
    case "service-restored":
      return r(
        e.failed.length > 0 ? "Warning" : "Normal",
        REASONS.serviceRestored,
        [
          e.services.length > 0 ? `Started ${e.services.join(", ")} again` : "",
          ...e.failed.map((f) => `could not start ${f.service}: ${f.error}`),
        ]
          .filter((x) => x !== "")
          .join("; "),
      );
    case "downgrade-allowed":
      return r(
        "Warning",
        REASONS.downgradeAllowed,
        `Accepted ${e.kind} ${e.to === undefined ? "with no signed version" : `version ${e.to}`}, older than version ${e.from} accepted before, signed with key ${e.keyId.slice(0, 16)}…, because a downgrade was allowed`,
      );
    case "drain-started":
      return r(
        "Normal",
        REASONS.drainStarted,
        `${e.cordoned ? "Cordoned the node" : "The node was already cordoned (it stays so)"}; evicting ${e.pods.length} pod${e.pods.length === 1 ? "" : "s"}${e.pods.length > 0 ? ` (${e.pods.slice(0, 10).join(", ")}${e.pods.length > 10 ? ", …" : ""})` : ""} before: ${e.reasons.join("; ")}`,
      );
    case "pod-evicted":
      return r("Normal", REASONS.podEvicted, `Evicted pod ${e.pod}`);
    case "drain-blocked":
      return r("Normal", REASONS.drainBlocked, `The drain waits for ${waitingText(e.waiting)}`);
    case "drain-finished":
      return r(
        "Normal",
        REASONS.drainFinished,
        `Drained: ${e.evicted} pod${e.evicted === 1 ? "" : "s"} evicted in ${(e.durationMs / 1000).toFixed(1)} s`,
      );
    case "drain-failed":
      return r(
        "Warning",
        REASONS.drainFailed,
        `The drain stopped the apply before anything disruptive ran: ${e.message}`,
      );
    case "uncordoned":
      return e.left
        ? r("Normal", REASONS.leftCordoned, "The host converged; the node stays cordoned, as it was before the drain")
        : r("Normal", REASONS.uncordoned, "Uncordoned the node: it takes pods again");
    case "step-started":
    case "step-finished":
    case "state":
      return undefined;
  }
}

type FailedEvent = Extract<LifecycleEvent, { type: "apply-failed" }>;

function failureText(e: Pick<FailedEvent, "component" | "phase" | "command" | "exitCode" | "errorTail">): string {
  const exit = e.exitCode === null ? "did not finish" : `exited ${e.exitCode}`;
  const tail = e.errorTail.trim() === "" ? "" : `: ${e.errorTail.trim()}`;
  return `${e.component} failed in ${e.phase}: ${e.command} ${exit}${tail}`;
}

/** The condition as the agent wants it, before timestamps. */
export interface DesiredCondition {
  readonly status: "True" | "False" | "Unknown";
  readonly reason: string;
  readonly message: string;
}

/** What the Node should show; persisted so a restart does not forget it. */
export interface DesiredNodeState {
  /** Annotation values; null removes an annotation the agent set before. */
  readonly annotations: Readonly<Record<string, string | null>>;
  readonly condition: DesiredCondition;
  /**
   * When the state behind the condition began (ISO-8601): the condition's lastTransitionTime when its status changes.
   */
  readonly since: string;
}

/** What the reporter remembers between events to derive {@link DesiredNodeState}. */
export interface NodeFacts {
  readonly state?: Extract<LifecycleEvent, { type: "state" }>;
  readonly lastFailure?: FailedEvent;
  readonly drift?: Extract<LifecycleEvent, { type: "drift-found" }>;
}

/** Folds one event into the facts; events that change nothing return the same object. */
export function foldFacts(facts: NodeFacts, e: LifecycleEvent): NodeFacts {
  switch (e.type) {
    case "state":
      return { ...facts, state: e };
    // `serve` reports its state when an apply ends; a drain in between shows on the Node as it starts and ends.
    case "drain-started":
      return facts.state ? { ...facts, state: { ...facts.state, state: "draining", at: e.at } } : facts;
    case "drain-finished":
      return facts.state ? { ...facts, state: { ...facts.state, state: "applying", at: e.at } } : facts;
    case "apply-failed":
      return { ...facts, lastFailure: e };
    case "drift-found":
      return { ...facts, drift: e };
    case "drift-corrected":
    case "apply-converged": {
      // A converged apply or a correction ends the drift episode and any earlier failure.
      return facts.state === undefined ? {} : { state: facts.state };
    }
    default:
      return facts;
  }
}

const CONDITION_BY_STATE: Record<AgentState, Omit<DesiredCondition, "message">> = {
  converged: { status: "True", reason: "Converged" },
  applying: { status: "False", reason: "Applying" },
  draining: { status: "False", reason: "Draining" },
  failed: { status: "False", reason: "ApplyFailed" },
  "reboot-pending": { status: "False", reason: "RebootPending" },
  uninstalled: { status: "False", reason: "Uninstalled" },
  idle: { status: "Unknown", reason: "Idle" },
};

/** The Node's desired annotations and condition, or undefined before the first `state` event. */
export function desiredNodeState(facts: NodeFacts): DesiredNodeState | undefined {
  const s = facts.state;
  if (s === undefined) return undefined;
  const components = [...s.components]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((c) => `${c.name}=${c.version}`)
    .join(",");
  const annotations: Record<string, string | null> = {
    [ANNOTATIONS.state]: s.state,
    [ANNOTATIONS.agentVersion]: s.agentVersion,
    [ANNOTATIONS.template]: s.template?.name ?? null,
    [ANNOTATIONS.templateVersion]: s.template?.version ?? null,
    [ANNOTATIONS.components]: components === "" ? null : components,
    [ANNOTATIONS.contentDigest]: s.contentDigest ?? null,
  };
  const applied = s.template === undefined ? "no template" : `template ${templateText(s.template)}`;
  const count = `${s.components.length} component${s.components.length === 1 ? "" : "s"}`;
  let condition: DesiredCondition;
  let since = s.at;
  if (s.state === "converged" && facts.drift !== undefined) {
    // Converged as last applied, but the files no longer match: not ready until corrected.
    condition = { status: "False", reason: "Drifted", message: truncateUtf8(driftText(facts.drift.items)) };
    since = facts.drift.at;
  } else if (s.state === "failed" && facts.lastFailure !== undefined) {
    condition = { ...CONDITION_BY_STATE.failed, message: truncateUtf8(failureText(facts.lastFailure)) };
  } else {
    const base = CONDITION_BY_STATE[s.state];
    const what = s.state === "converged" ? `${applied} applied, ${count}` : `${s.state}: ${applied}, ${count}`;
    condition = { ...base, message: truncateUtf8(what) };
  }
  return { annotations, condition, since };
}
