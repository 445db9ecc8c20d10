/**
 * One sandbox host: a real `winfleet-agent serve` process supervised the way
 * a machine runs its service. Its JSON event lines become the host's view
 * (template, components, state, current step, last error) and the fleet's
 * timeline; an exit with 3010 (194 on POSIX) is a reboot, so the agent is
 * started again, as the machine would boot; any other unexpected exit is a
 * crash, restarted with backoff.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, readFileSync, type WriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type DrainSettings, writeFileAtomic } from "../common";
import type { LifecycleEvent, TemplateRef } from "../lifecycle";
import { type HostPaths, type HostTarget, renderHostConfig } from "./spec";

/** What the status page and `local status` show of a host. */
export interface HostView {
  readonly name: string;
  state: "starting" | "applying" | "draining" | "converged" | "failed" | "rebooting" | "stopped" | "crashed";
  template?: TemplateRef;
  desired: TemplateRef;
  components: { name: string; version: string; state: string }[];
  step?: { component: string; version: string; phase: string; title: string; startedAt: string };
  lastError?: {
    component: string;
    phase: string;
    command: string;
    exitCode: number | null;
    errorTail: string;
    at: string;
  };
  /** A drain in progress: why, what was evicted, and what it waits for (pods, and the budgets in the way). */
  drain?: { reasons: string[]; evicted: number; waitingFor: string[]; since: string };
  pid?: number;
  reboots: number;
  restarts: number;
  readonly broker: string;
}

/** Something that happened on a host, for the timeline. */
export interface HostEvent {
  readonly host: string;
  readonly at: string;
  readonly kind: string;
  readonly text: string;
}

/** How a host reports to the fleet. */
export interface HostListener {
  changed(host: Host): void;
  event(e: HostEvent): void;
  /** Every lifecycle event, as the agent printed it. */
  lifecycle?(host: Host, e: LifecycleEvent): void;
}

const REBOOT_STATUSES = new Set([3010, 3010 % 256]);

/** A supervised sandbox host. */
export class Host {
  readonly view: HostView;
  private child: ChildProcess | undefined;
  private log: WriteStream | undefined;
  private stopping = false;
  private backoff = 1000;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    readonly name: string,
    readonly paths: HostPaths,
    private target: HostTarget,
    private readonly whitelist: readonly string[],
    private readonly agentEntry: string,
    private readonly listener: HostListener,
    /** The node's own kubeconfig when the fleet runs a cluster; the agent reports to its Node with it. */
    private readonly kubeconfig?: string,
    /** The pool's drain knobs, for a host that joins a cluster. */
    private readonly drain?: DrainSettings,
  ) {
    this.view = {
      name,
      state: "starting",
      desired: { name: target.template, version: target.templateVersion },
      components: [],
      reboots: 0,
      restarts: 0,
      broker: paths.broker,
    };
  }

  /** The target in the host's config. */
  get desired(): HostTarget {
    return this.target;
  }

  /** Records `target` as the host's own when something else (an upgrader pod) moved it there. */
  adopt(target: HostTarget): void {
    this.target = target;
    this.view.desired = { name: target.template, version: target.templateVersion };
    this.listener.changed(this);
  }

  /** Writes the host's config for `target` (atomically); a running agent is told at once. */
  async configure(target: HostTarget): Promise<void> {
    this.target = target;
    this.view.desired = { name: target.template, version: target.templateVersion };
    await mkdir(this.paths.root, { recursive: true });
    await writeFileAtomic(
      this.paths.config,
      renderHostConfig(this.name, this.paths, target, this.whitelist, this.kubeconfig, this.drain),
      { mode: 0o600, makeParents: true },
    );
    if (this.child?.pid !== undefined && this.child.exitCode === null) this.child.kill("SIGHUP");
    this.listener.changed(this);
  }

  /**
   * Whether the host runs: false while its agent is stopped by a signal (SIGSTOP, a debugger), as a machine that froze.
   * Read from the kernel's view of the process; true where that cannot be read.
   */
  running(): boolean {
    const pid = this.child?.pid;
    if (pid === undefined || this.child?.exitCode !== null) return true;
    try {
      // The state follows the command name, which is in parentheses and may itself hold any character.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return !/^[tT]$/.test(stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3));
    } catch {
      return true;
    }
  }

  /** Starts the agent (again). */
  start(): void {
    if (this.stopping) return;
    this.log ??= createWriteStream(this.paths.log, { flags: "a", mode: 0o600 });
    const child = spawn(process.execPath, [this.agentEntry, "serve", "--config", this.paths.config], {
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: { ...process.env },
    });
    this.child = child;
    this.view.pid = child.pid;
    this.view.state = this.view.state === "rebooting" ? "rebooting" : "starting";
    let buffer = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      this.log?.write(chunk);
      buffer += chunk.toString("utf8");
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          this.onEvent(JSON.parse(line) as LifecycleEvent & { event?: string });
        } catch {
          // not an event line; it is in the log
        }
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => this.log?.write(chunk));
    this.exited = new Promise((resolve) =>
      child.on("exit", (code, signal) => {
        this.onExit(code, signal);
        resolve();
      }),
    );
    this.listener.changed(this);
  }

  /** Stops the agent: SIGTERM, then SIGKILL of its whole process group after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => killGroup(child.pid), graceMs);
      await this.exited;
      clearTimeout(timer);
      killGroup(child.pid); // anything the agent's commands left in its group
    }
    this.view.state = "stopped";
    this.view.pid = undefined;
    this.listener.changed(this);
    await new Promise<void>((resolve) => (this.log ? this.log.end(resolve) : resolve()));
    this.log = undefined;
  }

  private onEvent(raw: LifecycleEvent & { event?: string }): void {
    const e = { ...raw, type: raw.event ?? raw.type } as LifecycleEvent;
    const v = this.view;
    const note = (kind: string, text: string): void => this.listener.event({ host: this.name, at: e.at, kind, text });
    switch (e.type) {
      case "apply-started":
        v.state = "applying";
        note(
          "apply-started",
          `${e.resumed ? "resuming" : "applying"} ${e.template.name} ${e.template.version} (${e.steps} steps)`,
        );
        break;
      case "step-started":
        v.step = {
          component: e.step.component,
          version: e.step.version,
          phase: e.step.phase,
          title: e.step.title,
          startedAt: e.at,
        };
        break;
      case "step-finished":
        v.step = undefined;
        break;
      case "component-installed":
        this.setComponent(e.component, e.version);
        note("component", `installed ${e.component} ${e.version}`);
        break;
      case "component-upgraded":
        this.setComponent(e.component, e.to);
        note("component", `upgraded ${e.component} ${e.from} → ${e.to}`);
        break;
      case "component-removed":
        v.components = v.components.filter((c) => c.name !== e.component);
        note("component", `removed ${e.component} ${e.version}`);
        break;
      case "reboot-required":
        note("reboot", `reboot: ${e.reasons.join("; ")}`);
        break;
      case "apply-failed":
        v.state = "failed";
        v.step = undefined;
        v.drain = undefined;
        v.lastError = {
          component: e.component,
          phase: e.phase,
          command: e.command,
          exitCode: e.exitCode,
          errorTail: e.errorTail,
          at: e.at,
        };
        note("failed", `${e.component} ${e.phase}: ${e.command} exited ${String(e.exitCode)}`);
        break;
      case "apply-converged":
        v.state = "converged";
        v.template = e.template;
        v.step = undefined;
        v.drain = undefined;
        if (e.changed) note("converged", `converged to ${e.template.name} ${e.template.version}`);
        break;
      case "drain-started":
        v.state = "draining";
        v.drain = { reasons: [...e.reasons], evicted: 0, waitingFor: [...e.pods], since: e.at };
        note(
          "drain",
          `${e.cordoned ? "cordoned" : "already cordoned"}; draining ${e.pods.length} pods: ${e.reasons.join("; ")}`,
        );
        break;
      case "pod-evicted":
        v.state = "draining";
        if (v.drain) v.drain.evicted++;
        note("drain", `evicted ${e.pod}`);
        break;
      case "drain-blocked":
        v.state = "draining";
        if (v.drain) v.drain.waitingFor = e.waiting.map((w) => `${w.pod} (${w.why})`);
        note("drain", `waiting for ${e.waiting.map((w) => `${w.pod} (${w.why})`).join("; ")}`);
        break;
      case "drain-finished":
        v.state = "applying";
        v.drain = undefined;
        note("drain", `drained: ${e.evicted} pods evicted in ${(e.durationMs / 1000).toFixed(1)} s`);
        break;
      case "drain-failed":
        v.drain = undefined;
        note("failed", `drain stopped the apply: ${e.message}`);
        break;
      case "uncordoned":
        note("drain", e.left ? "left cordoned, as it was before the drain" : "uncordoned");
        break;
      case "drift-found":
        note("drift", `drift in ${e.items.length} files`);
        break;
      case "drift-corrected":
        note("drift", `corrected ${e.components.join(", ")}`);
        break;
      case "service-down":
        note("services", e.items.map((i) => `${i.service} ${i.problem}`).join(", "));
        break;
      case "service-restored":
        note("services", `started ${e.services.join(", ")} again`);
        break;
      case "downgrade-allowed":
        note("downgrade", `${e.kind} ${e.to ?? "(unversioned)"} accepted over ${e.from}`);
        break;
      case "state":
        v.components = e.components.map((c) => ({ ...c }));
        // `template` is what the host converged to; a failed upgrade's target is `desired`.
        if (e.template && e.state === "converged") v.template = e.template;
        if (e.state === "converged") v.state = "converged";
        else if (e.state === "failed") v.state = "failed";
        else if (e.state === "draining") v.state = "draining";
        break;
      case "reboot-done":
        break;
    }
    this.listener.lifecycle?.(this, e);
    this.listener.changed(this);
  }

  // The agent's `state` snapshots arrive only at the end of a run; between them the component events keep the view
  // current.
  private setComponent(name: string, version: string): void {
    const entry = this.view.components.find((c) => c.name === name);
    if (entry) Object.assign(entry, { version, state: "installed" });
    else this.view.components.push({ name, version, state: "installed" });
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.view.pid = undefined;
    if (this.stopping) return;
    if (code !== null && REBOOT_STATUSES.has(code)) {
      this.view.state = "rebooting";
      this.view.reboots++;
      this.listener.event({
        host: this.name,
        at: new Date().toISOString(),
        kind: "reboot",
        text: "restarting (reboot)",
      });
      this.listener.changed(this);
      setTimeout(() => this.start(), 200).unref();
      return;
    }
    this.view.state = "crashed";
    this.view.restarts++;
    this.listener.event({
      host: this.name,
      at: new Date().toISOString(),
      kind: "crashed",
      text: `agent exited ${signal ?? String(code)}; restarting in ${this.backoff / 1000} s (see ${join(this.paths.dir, "agent.log")})`,
    });
    this.listener.changed(this);
    setTimeout(() => this.start(), this.backoff).unref();
    this.backoff = Math.min(this.backoff * 2, 30_000);
  }
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // the group is gone
  }
}
