/**
 * The host's lifecycle state as people and probes read it, derived from the
 * journal alone: the template, each component's version and state, the step
 * running or failed, a pending reboot, and recent history.
 */
import type { AgentState, TemplateRef } from "./events";
import { type DrainRecord, type Failure, type Journal, readJournal } from "./journal";
import { type Step, describeStep } from "./model";

/** One component's line. */
export interface ComponentStatus {
  readonly name: string;
  readonly version: string;
  readonly state: "installed" | "installing" | "upgrading" | "removing";
}

/** Everything `status` shows. */
export interface StatusReport {
  readonly state: AgentState;
  /** The template converged to, or being converged to. */
  readonly template: TemplateRef | undefined;
  readonly contentDigest: string | undefined;
  readonly components: readonly ComponentStatus[];
  readonly run?: {
    readonly kind: string;
    readonly target: TemplateRef | null;
    readonly done: number;
    readonly total: number;
    /** The step running now or interrupted, or the next one. */
    readonly step?: {
      readonly index: number;
      readonly component: string;
      readonly phase: string;
      readonly title: string;
    };
  };
  readonly failure?: Failure;
  readonly reboot?: { readonly reasons: readonly string[]; readonly requestedAt: string };
  /** A drain of the node: where it stands and what it waits for (gone once the node is uncordoned). */
  readonly drain?: DrainRecord;
  readonly history: Journal["history"];
}

const PENDING_STATE = {
  install: "installing",
  post_upgrade: "upgrading",
  upgrade: "upgrading",
  remove: "removing",
} as const;

/** Derives the status from a journal. */
export function statusOf(journal: Journal, historyLimit = 10): StatusReport {
  const run = journal.run;
  const components = journal.installed.map((c): ComponentStatus => ({
    name: c.name,
    version: c.version,
    state: c.pending ? PENDING_STATE[c.pending] : "installed",
  }));
  const drain = journal.drain;
  const draining = drain?.state === "cordoning" || drain?.state === "evicting";
  let state: AgentState;
  if (run)
    state =
      run.status === "failed"
        ? "failed"
        : run.status === "reboot-pending"
          ? "reboot-pending"
          : draining
            ? "draining"
            : "applying";
  // Converged, but the node is not uncordoned yet: not ready, so an upgrader waits for it.
  else if (drain && drain.state !== "skipped") state = "draining";
  else if (journal.applied) state = "converged";
  else if (journal.uninstalledAt) state = "uninstalled";
  else state = "idle";
  const template = run?.target ?? journal.applied?.template;
  const index = run ? (run.current?.step ?? run.failure?.step ?? run.next) : undefined;
  const step: Step | undefined = run && index !== undefined ? run.steps[index] : undefined;
  return {
    state,
    template: template ?? undefined,
    contentDigest: (run ? run.contentDigest : journal.applied?.contentDigest) ?? undefined,
    components,
    ...(run
      ? {
          run: {
            kind: run.kind,
            target: run.target,
            done: run.next,
            total: run.steps.length,
            ...(step && index !== undefined
              ? { step: { index, component: step.component, phase: step.phase, title: describeStep(step) } }
              : {}),
          },
        }
      : {}),
    ...(run?.failure ? { failure: run.failure } : {}),
    ...(run?.status === "reboot-pending" && run.reboot
      ? { reboot: { reasons: run.reboot.reasons, requestedAt: run.reboot.requestedAt } }
      : {}),
    ...(drain ? { drain } : {}),
    history: journal.history.slice(-historyLimit),
  };
}

/** Reads the journal under `root` and derives the status. */
export async function readStatus(root: string, historyLimit = 10): Promise<StatusReport> {
  return statusOf(await readJournal(root), historyLimit);
}
