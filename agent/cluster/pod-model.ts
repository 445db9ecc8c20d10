/**
 * The pods the node stand-in's runner reads, as far as it reads them, and what it keeps of each
 * while it runs: split from pod-runner.ts, which runs them.
 */
import type { ChildProcess } from "node:child_process";
import type { ContainerLogWriter } from "./container-log";

/** One container of a pod spec, as far as the runner reads it. */
export interface Container {
  readonly name: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly { readonly name: string; readonly value?: string }[];
  readonly readinessProbe?: {
    readonly exec?: { readonly command: readonly string[] };
    readonly periodSeconds?: number;
    readonly timeoutSeconds?: number;
    /** Consecutive failures that turn a ready container unready. @default 3 */
    readonly failureThreshold?: number;
    /** Consecutive successes that turn an unready container ready. @default 1 */
    readonly successThreshold?: number;
  };
}

/** A pod, as far as the runner reads it. */
export interface Pod {
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly deletionTimestamp?: string;
    /** The grace period a deletion (or eviction) gave the pod's containers. */
    readonly deletionGracePeriodSeconds?: number;
  };
  readonly spec: {
    readonly initContainers?: readonly Container[];
    readonly containers: readonly Container[];
    readonly volumes?: readonly { readonly name: string; readonly configMap?: { readonly name: string } }[];
    readonly restartPolicy?: string;
    readonly activeDeadlineSeconds?: number;
    /** @default 30 */
    readonly terminationGracePeriodSeconds?: number;
  };
}

/** What the host gives its pods. */
export interface PodHost {
  /** Where pod directories are made. */
  readonly dir: string;
  /** Variables every container sees (the host's, as a HostProcess container does). */
  readonly env: Readonly<Record<string, string>>;
  /** Host commands a pod's first word maps to, e.g. `winfleet-agent` → `[node, agent.js]`. */
  readonly commands: Readonly<Record<string, readonly string[]>>;
  /** The first pause before listing the node's pods again after a failed list or watch. @default 1000 */
  readonly retryMs?: number;
  readonly log?: (line: string) => void;
}

/** A pod the runner runs, and what it knows of it so far. */
export interface Running {
  readonly pod: Pod;
  readonly processes: ChildProcess[];
  stopped: boolean;
  ready: boolean;
  probeTimer?: NodeJS.Timeout;
  readonly startedAt: string;
  initialized: boolean;
  initError?: string;
  /** Containers that ended: exit code and when. */
  readonly exited: Map<string, { readonly code: number; readonly at: string }>;
  readonly logs: Map<string, ContainerLogWriter>;
  deadlineTimer?: NodeJS.Timeout;
  /** Set when the pod ended for good (Failed before its containers did: an init container, the deadline). */
  failed?: { readonly reason: string; readonly message: string };
  /** Its graceful termination, once its deletion was seen. */
  terminating?: Promise<void>;
  /** Each container's process, by container name. */
  readonly main: Map<string, ChildProcess>;
  /** Each condition's status and when it last changed, which a kubelet keeps across reports. */
  readonly transitions?: Map<string, { readonly status: string; readonly at: string }>;
}

/** Where a container's log is, and whether it still runs (what the kubelet API serves). */
export interface ContainerLogRef {
  readonly file: string;
  running(): boolean;
}

/** The time as Kubernetes writes it: seconds, UTC. */
export const now = (): string => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/** Expands `$(NAME)` as a kubelet does; an unknown name stays as written. */
export function expand(word: string, env: Readonly<Record<string, string>>): string {
  return word.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string) => env[name] ?? all);
}
