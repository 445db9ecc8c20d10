/**
 * The local fleet's manager: owns a state directory, builds the stack's
 * content, runs one supervised agent per sandbox host, brings new hosts up,
 * rolls target changes host by host, and tells subscribers (the terminal, the
 * status page) everything as it happens. One rollout at a time; a newer
 * request takes over once the hosts already moving have finished.
 */
import { readFile } from "node:fs/promises";
import type { LifecycleEvent } from "../lifecycle";
import { rollThroughCluster } from "./cluster-rollout";
import { buildFleetContent } from "./content";
import { Host, type HostEvent, type HostView } from "./host";
import { type HostOutcome, type RolloutResult, outcomeWatcher, rollOut, startsHostTimeout } from "./rollout";
import { type FleetSpec, type HostTarget, hostNames, hostPaths, sandboxWhitelist } from "./spec";

/** What subscribers hear. */
export type FleetEvent =
  | { readonly type: "host"; readonly host: HostView }
  | { readonly type: "timeline"; readonly event: HostEvent }
  | {
      readonly type: "rollout";
      readonly state: "started" | "host" | "finished";
      readonly text: string;
      readonly result?: RolloutResult;
    };

/** The fleet as `local status` and the page show it. */
export interface FleetStatus {
  readonly stack: string;
  readonly stackFile: string;
  readonly desired: {
    readonly template: string;
    readonly templateVersion: string;
    readonly hosts: number;
    readonly maxUnavailable: number;
  };
  readonly hosts: readonly HostView[];
  readonly rollout: { readonly running: boolean; readonly last?: RolloutResult };
  readonly timeline: readonly HostEvent[];
}

/** Options for {@link FleetManager}. */
export interface ManagerOptions {
  readonly stateDir: string;
  /** The agent's entry script (bin/winfleet-agent.js or the bundle). */
  readonly agentEntry: string;
  /** How long one host may take to converge during a rollout. @default 5 min */
  readonly hostTimeoutMs?: number;
  /** A joined host's own kubeconfig (cluster mode), which its agent reports with. */
  readonly kubeconfigFor?: (host: string) => string | undefined;
  /**
   * Cluster mode: deploys a spec to the cluster side, whose upgrader pods then move the hosts
   * (the DaemonSet controller rolls them, `maxUnavailable` at a time); the fleet only watches.
   */
  readonly deploy?: (spec: FleetSpec) => Promise<void>;
  /** Cluster mode: resolves once the upgrader DaemonSets have rolled (every pod updated and available). */
  readonly settled?: (signal: AbortSignal) => Promise<void>;
}

const TIMELINE_LIMIT = 300;

/** A running local fleet. */
export class FleetManager {
  private readonly hosts = new Map<string, Host>();
  private readonly listeners = new Set<(e: FleetEvent) => void>();
  private readonly waiters = new Set<(host: Host, e: LifecycleEvent) => void>();
  private readonly timeline: HostEvent[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private current: AbortController | undefined;
  private rolling = false;
  private last: RolloutResult | undefined;
  private readonly whitelist = sandboxWhitelist();

  constructor(
    private spec: FleetSpec,
    private readonly options: ManagerOptions,
  ) {}

  /** Hears every fleet event until the returned function is called. */
  subscribe(listener: (e: FleetEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The fleet now. */
  status(): FleetStatus {
    return {
      stack: this.spec.stack,
      stackFile: this.spec.stackFile,
      desired: {
        template: this.spec.template,
        templateVersion: this.spec.templateVersion,
        hosts: this.spec.hosts,
        maxUnavailable: this.spec.maxUnavailable,
      },
      hosts: [...this.hosts.values()].map((h) => ({ ...h.view })),
      rollout: { running: this.rolling, ...(this.last ? { last: this.last } : {}) },
      timeline: [...this.timeline],
    };
  }

  /** A host by name. */
  host(name: string): Host | undefined {
    return this.hosts.get(name);
  }

  /**
   * Brings the fleet to `spec`: new hosts are installed at once, hosts beyond
   * the count are stopped, and the others are rolled to the new target.
   */
  apply(spec: FleetSpec): Promise<RolloutResult> {
    this.current?.abort();
    const controller = new AbortController();
    this.current = controller;
    const run = this.chain.then(() => this.converge(spec, controller.signal));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Stops every agent. */
  async shutdown(): Promise<void> {
    this.current?.abort();
    await Promise.all([...this.hosts.values()].map((h) => h.stop()));
  }

  private emit(e: FleetEvent): void {
    for (const l of this.listeners) l(e);
  }

  private note(e: HostEvent): void {
    this.timeline.push(e);
    if (this.timeline.length > TIMELINE_LIMIT) this.timeline.splice(0, this.timeline.length - TIMELINE_LIMIT);
    this.emit({ type: "timeline", event: e });
  }

  private async converge(spec: FleetSpec, signal: AbortSignal): Promise<RolloutResult> {
    this.spec = spec;
    this.rolling = true;
    try {
      const target: HostTarget = {
        content: await buildFleetContent(spec.content, this.options.stateDir),
        template: spec.template,
        templateVersion: spec.templateVersion,
      };
      const names = hostNames(spec.pool, spec.hosts);
      for (const [name, host] of this.hosts) {
        if (names.includes(name)) continue;
        this.note({
          host: name,
          at: new Date().toISOString(),
          kind: "removed",
          text: "not in the stack any more: stopped",
        });
        await host.stop();
        this.hosts.delete(name);
      }
      const fresh: Host[] = [];
      const existing: Host[] = [];
      for (const name of names) {
        let host = this.hosts.get(name);
        if (!host) {
          const paths = hostPaths(this.options.stateDir, name);
          const onDisk = await readTarget(paths.config);
          host = new Host(
            name,
            paths,
            onDisk ?? target,
            this.whitelist,
            this.options.agentEntry,
            {
              changed: (h) => this.emit({ type: "host", host: { ...h.view } }),
              event: (e) => this.note(e),
              lifecycle: (h, e) => {
                for (const w of this.waiters) w(h, e);
              },
            },
            this.options.kubeconfigFor?.(name),
            spec.drain,
          );
          this.hosts.set(name, host);
          if (onDisk) {
            existing.push(host);
            // A host kept from an earlier run comes back on the target it had, then rolls like any other; but the
            // rest of its config is this run's (cluster or not, this control plane's credential, this state
            // directory's paths), or it would report to a cluster that is gone, or to none.
            await host.configure(onDisk);
            host.start();
          } else fresh.push(host);
        } else existing.push(host);
      }
      // New hosts have nothing to keep available: install them all at once.
      const installs = fresh.map((h) => this.move(h, target));
      // In cluster mode the upgraders retarget hosts to content they unpacked themselves: the same
      // template and version is the same target whatever the content's path.
      const pending = existing.filter((h) => !sameTarget(h.desired, target, this.options.deploy !== undefined));
      if (this.options.deploy && pending.length > 0) {
        this.emit({
          type: "rollout",
          state: "started",
          text: `${spec.template} ${spec.templateVersion}: ${pending.length} to roll through the DaemonSet controller (maxUnavailable ${spec.maxUnavailable})`,
        });
        const result = await rollThroughCluster({
          spec,
          pending: pending.map((h) => ({ name: h.name, watch: (stop) => this.move(h, target, false, stop) })),
          deploy: this.options.deploy,
          settled: this.options.settled,
          converged: (name) => {
            this.emit({
              type: "rollout",
              state: "host",
              text: `${name} converged to ${spec.template} ${spec.templateVersion}`,
            });
            this.hosts.get(name)?.adopt(target);
          },
          signal,
        });
        this.last = result;
        this.emit({ type: "rollout", state: "finished", text: describeResult(result), result });
        return result;
      }
      this.emit({
        type: "rollout",
        state: "started",
        text: `${spec.template} ${spec.templateVersion}: ${fresh.length} new, ${pending.length} to roll (maxUnavailable ${spec.maxUnavailable})`,
      });
      const rolled = await rollOut(
        pending.map((h) => ({ name: h.name, apply: () => this.move(h, target) })),
        spec.maxUnavailable,
        {
          signal,
          onStart: (name) =>
            this.emit({
              type: "rollout",
              state: "host",
              text: `rolling ${name} to ${spec.template} ${spec.templateVersion}`,
            }),
        },
      );
      const installed = await Promise.all(
        installs.map(async (p, i) => ({ name: fresh[i]?.name ?? "", outcome: await p })),
      );
      const failedInstall = installed.find((x) => !x.outcome.ok);
      let result: RolloutResult = rolled;
      if (rolled.kind === "done" && failedInstall && !failedInstall.outcome.ok) {
        const ok = installed.filter((x) => x.outcome.ok).map((x) => x.name);
        result = {
          kind: "halted",
          host: failedInstall.name,
          step: failedInstall.outcome.step,
          error: failedInstall.outcome.error,
          done: [...ok, ...rolled.hosts],
          untouched: [],
        };
      } else if (rolled.kind === "done") {
        result = { kind: "done", hosts: [...installed.map((x) => x.name), ...rolled.hosts] };
      }
      this.last = result;
      this.emit({ type: "rollout", state: "finished", text: describeResult(result), result });
      return result;
    } finally {
      this.rolling = false;
    }
  }

  /**
   * Configures a host for `target` (unless `configure` is false: something else moves it) and waits until its agent
   * converged there or failed. The host has `hostTimeoutMs` from the moment it is moved; when something else moves it
   * (the DaemonSet controller, at its own pace and in its own order), from the moment its agent starts applying the
   * target: at `maxUnavailable: 1` the last of 50 hosts waits many minutes for its turn, through no fault of its own.
   */
  private move(host: Host, target: HostTarget, configure = true, cancel?: AbortSignal): Promise<HostOutcome> {
    return new Promise<HostOutcome>((resolve) => {
      const timeoutMs = this.options.hostTimeoutMs ?? 5 * 60_000;
      let timer: NodeJS.Timeout | undefined;
      const finish = (o: HostOutcome): void => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        cancel?.removeEventListener("abort", onCancel);
        resolve(o);
      };
      const onCancel = (): void => finish({ ok: false, step: "(none)", error: "the rollout ended first" });
      const arm = (): void => {
        timer ??= setTimeout(
          () =>
            finish({
              ok: false,
              step: host.view.step
                ? `${host.view.step.component} ${host.view.step.phase}: ${host.view.step.title}`
                : "(none)",
              error: `did not converge within ${timeoutMs / 1000} s`,
            }),
          timeoutMs,
        );
      };
      if (configure) arm();
      const watch = outcomeWatcher(target);
      const waiter = (h: Host, e: LifecycleEvent): void => {
        if (h !== host) return;
        if (startsHostTimeout(target, e)) arm();
        const outcome = watch(e);
        if (outcome) finish(outcome);
      };
      this.waiters.add(waiter);
      if (cancel?.aborted) return onCancel();
      cancel?.addEventListener("abort", onCancel, { once: true });
      if (!configure) return;
      const running = host.view.pid !== undefined;
      host.configure(target).then(
        () => {
          if (!running) host.start();
        },
        (e: unknown) => finish({ ok: false, step: "configure", error: String(e) }),
      );
    });
  }
}

function sameTarget(a: HostTarget, b: HostTarget, ignoreContentPath = false): boolean {
  return (
    (ignoreContentPath || a.content === b.content) &&
    a.template === b.template &&
    a.templateVersion === b.templateVersion
  );
}

async function readTarget(configFile: string): Promise<HostTarget | undefined> {
  try {
    const c = JSON.parse(await readFile(configFile, "utf8")) as Partial<HostTarget>;
    return typeof c.content === "string" && typeof c.template === "string" && typeof c.templateVersion === "string"
      ? { content: c.content, template: c.template, templateVersion: c.templateVersion }
      : undefined;
  } catch {
    return undefined;
  }
}

/** One line about a rollout's end. */
export function describeResult(r: RolloutResult): string {
  switch (r.kind) {
    case "done":
      return `rollout done: ${r.hosts.length === 0 ? "every host already there" : r.hosts.join(", ")}`;
    case "halted":
      return `rollout halted at ${r.host}: ${r.step}: ${r.error}${r.untouched.length > 0 ? `; not started: ${r.untouched.join(", ")}` : ""}`;
    case "cancelled":
      return `rollout superseded; not started: ${r.untouched.join(", ")}`;
  }
}
