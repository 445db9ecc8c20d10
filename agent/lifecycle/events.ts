/**
 * What the lifecycle engine tells the world while it works: the one event
 * vocabulary the terminal progress, the JSON-lines log, the Kubernetes reporter
 * (Events, annotations, the WinfleetReady condition) and the local fleet's status
 * page all consume. Events carry no secret: command text and output tails are
 * masked before they get here.
 */

/** A template, by name and version. */
export interface TemplateRef {
  readonly name: string;
  readonly version: string;
}

/** The phases of an apply, in the order they run. */
export const PHASES = ["uninstall", "pre_upgrade", "files", "install", "post_upgrade"] as const;
/** One phase. */
export type Phase = (typeof PHASES)[number];

/** Enough about a step to show it to a person. */
export interface StepSummary {
  /** Stable within a run: `<index>` of the plan. */
  readonly id: number;
  readonly component: string;
  readonly version: string;
  readonly phase: Phase;
  /** What the step does: `commands[0]: …`, `files`, `remove files`, `reboot`. */
  readonly title: string;
}

/** A file whose bytes, mode or type differ from what was applied. */
export interface DriftItem {
  readonly component: string;
  /** Config path (`/k/kubelet.ps1`). */
  readonly path: string;
  readonly problem: "missing" | "content" | "mode" | "type";
}

/**
 * The agent's overall state, as `status` and the Node annotation show it: `draining` while the node is
 * cordoned and its pods evicted before a disruptive step, or waits to be uncordoned after converging.
 */
export type AgentState = "idle" | "applying" | "draining" | "converged" | "failed" | "reboot-pending" | "uninstalled";

/** Every event; `at` is an ISO-8601 time. */
export type LifecycleEvent =
  | {
      readonly type: "apply-started";
      readonly at: string;
      readonly template: TemplateRef;
      readonly steps: number;
      readonly resumed: boolean;
    }
  | { readonly type: "step-started"; readonly at: string; readonly step: StepSummary }
  | { readonly type: "step-finished"; readonly at: string; readonly step: StepSummary; readonly durationMs: number }
  | { readonly type: "component-installed"; readonly at: string; readonly component: string; readonly version: string }
  | {
      readonly type: "component-upgraded";
      readonly at: string;
      readonly component: string;
      readonly from: string;
      readonly to: string;
    }
  | { readonly type: "component-removed"; readonly at: string; readonly component: string; readonly version: string }
  | { readonly type: "reboot-required"; readonly at: string; readonly reasons: readonly string[] }
  | { readonly type: "reboot-done"; readonly at: string }
  | {
      readonly type: "apply-failed";
      readonly at: string;
      readonly component: string;
      readonly phase: Phase;
      readonly command: string;
      readonly exitCode: number | null;
      /** The last lines of the error output, masked. */
      readonly errorTail: string;
    }
  | { readonly type: "apply-converged"; readonly at: string; readonly template: TemplateRef; readonly changed: boolean }
  | {
      /** The node is cordoned (unless someone else had) and its pods are being evicted before a disruptive step. */
      readonly type: "drain-started";
      readonly at: string;
      readonly reasons: readonly string[];
      /** False when the node was already cordoned by someone else (it is then left cordoned). */
      readonly cordoned: boolean;
      /** The pods to evict. */
      readonly pods: readonly string[];
    }
  | { readonly type: "pod-evicted"; readonly at: string; readonly pod: string }
  | {
      /** Evictions the API server refused (a PodDisruptionBudget), or pods still terminating, with why. */
      readonly type: "drain-blocked";
      readonly at: string;
      readonly waiting: readonly { readonly pod: string; readonly why: string }[];
    }
  | { readonly type: "drain-finished"; readonly at: string; readonly evicted: number; readonly durationMs: number }
  | {
      /** The drain could not finish (its timeout, pods it may not evict): the run stops before anything disruptive. */
      readonly type: "drain-failed";
      readonly at: string;
      readonly message: string;
      readonly waiting: readonly { readonly pod: string; readonly why: string }[];
    }
  | {
      /** The drain ended: the node uncordoned, or left cordoned as someone else had it (`left`). */
      readonly type: "uncordoned";
      readonly at: string;
      readonly left: boolean;
    }
  | { readonly type: "drift-found"; readonly at: string; readonly items: readonly DriftItem[] }
  | { readonly type: "drift-corrected"; readonly at: string; readonly components: readonly string[] }
  | {
      /** Node services an installed component keeps running, found stopped, disabled or gone. */
      readonly type: "service-down";
      readonly at: string;
      readonly items: readonly {
        readonly component: string;
        readonly service: string;
        readonly problem: "stopped" | "disabled" | "missing";
      }[];
    }
  | {
      /** Node services the agent started again (and set to start automatically); those it could not, with why. */
      readonly type: "service-restored";
      readonly at: string;
      readonly services: readonly string[];
      readonly failed: readonly { readonly service: string; readonly error: string }[];
    }
  | {
      /**
       * A signed bundle older than the one accepted before (or unversioned) was accepted because the operator allowed
       * it.
       */
      readonly type: "downgrade-allowed";
      readonly at: string;
      readonly kind: "agent" | "content";
      /** The signing key's fingerprint (SHA-256 of its DER, hex). */
      readonly keyId: string;
      /** The version accepted before. */
      readonly from: string;
      /** The version accepted now; undefined when its signature carries none. */
      readonly to: string | undefined;
    }
  | {
      /** The state a Node annotation or a status page shows; sent whenever it changes. */
      readonly type: "state";
      readonly at: string;
      readonly state: AgentState;
      readonly template: TemplateRef | undefined;
      readonly components: readonly { readonly name: string; readonly version: string; readonly state: string }[];
      readonly agentVersion: string;
      readonly contentDigest: string | undefined;
    };

/** Whoever listens to the engine. Must not throw and must not block: queue and return. */
export interface LifecycleObserver {
  event(e: LifecycleEvent): void;
}

/** Fans events out to several observers; one that throws does not stop the others. */
export function fanOut(observers: readonly LifecycleObserver[]): LifecycleObserver {
  return {
    event(e) {
      for (const o of observers) {
        try {
          o.event(e);
        } catch {
          // an observer's failure is its own; the engine keeps going
        }
      }
    },
  };
}
