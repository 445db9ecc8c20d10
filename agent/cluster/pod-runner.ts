/**
 * The node stand-in's pod runner: the pods the scheduler or a controller binds to this node run
 * as processes on the host, the way HostProcess containers run on Windows. Each pod gets a
 * directory (its `CONTAINER_SANDBOX_MOUNT_POINT` and working directory) holding its ConfigMap
 * volumes (mounted again after a pause while that fails); init containers run in order, then the
 * containers; the readiness probe the pod declares is executed on its period and counted against
 * its failure and success thresholds; and the pod's status is written with the node's own
 * credential. Each container's output goes to its log file as a kubelet's does (container-log.ts;
 * served by kubelet-api.ts). A pod with `restartPolicy: Never` or `OnFailure` ends: Succeeded when
 * every container exited 0, Failed otherwise or when `activeDeadlineSeconds` runs out. A pod being
 * deleted ends as a kubelet ends it (SIGTERM, SIGKILL after its grace period) and is then removed.
 * The node's pods are listed and then watched, as a kubelet does, not polled.
 *
 * Commands are the pod's own: `image` is ignored, the first word may be mapped to a host
 * command (`winfleet-agent` to the host's agent), and `$(NAME)` is expanded from the container's
 * environment and the host's. Not supported: hostPath, secret and projected volumes, liveness
 * and startup probes, resource limits, restarts of exited containers (a pod of restartPolicy
 * Always whose container exits stays Running; OnFailure is treated as Never). A container is its
 * first process: processes it starts are not ended with it (no job object or cgroup holds them),
 * and they stay in the fleet's process group, so a fleet killed outright takes them along.
 */
import type { ChildProcess } from "node:child_process";
import { rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { ContainerLogWriter } from "./container-log";
import { commandOf, endProcesses, spawnContainer, untilExit } from "./container-process";
import type { KubeClient } from "./kube-client";
import { listAndWatch } from "./list-and-watch";
import { deletePodUntilGone, mountConfigMaps } from "./pod-io";
import { type Container, type ContainerLogRef, type Pod, type PodHost, type Running, now } from "./pod-model";
import { endsItself, podStatus } from "./pod-status";

/** Runs the pods bound to one node. */
export class PodRunner {
  private readonly pods = new Map<string, Running>();
  private readonly stopping = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  /** Pod events are handled one at a time, in the order the API server sent them. */
  private handling: Promise<void> = Promise.resolve();
  /** Removals under way, by pod uid: each ends when the pod is seen gone (a DELETED event, or absent from a list). */
  private readonly removing = new Map<string, AbortController>();

  constructor(
    private readonly api: KubeClient,
    private readonly nodeName: string,
    private readonly host: PodHost,
  ) {}

  /** Starts listing and watching the node's pods, as a kubelet does. */
  start(): void {
    this.loop = this.listAndWatch();
  }

  /** Stops every pod's processes (the pods stay bound, as when a kubelet stops). */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await this.handling;
    await Promise.all([...this.pods.values()].map((r) => this.kill(r)));
  }

  /** The node's pods, listed and then watched; events are handled one at a time, in order. */
  private listAndWatch(): Promise<void> {
    return listAndWatch<Pod>(
      this.api,
      `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${this.nodeName}`)}`,
      {
        onList: (items) => this.enqueue(() => this.reconcile(items)),
        onEvent: (type, pod) => void this.enqueue(async () => (type === "DELETED" ? this.forget(pod) : this.take(pod))),
        signal: this.stopping.signal,
        ...(this.host.retryMs !== undefined ? { retryMs: this.host.retryMs } : {}),
        log: (line) => this.host.log?.(`${this.nodeName}: pods: ${line}`),
      },
    );
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.handling.then(work).catch((e: unknown) => this.host.log?.(`${this.nodeName}: ${String(e)}`));
    this.handling = next;
    return next;
  }

  /** A full list: every pod in it is taken, and a pod running here that is not in it is gone. */
  private async reconcile(items: readonly Pod[]): Promise<void> {
    const seen = new Set(items.map((p) => p.metadata.uid));
    for (const [uid, removal] of this.removing) if (!seen.has(uid)) removal.abort();
    for (const pod of items) this.take(pod);
    for (const [uid, r] of this.pods) {
      if (!seen.has(uid) && !r.terminating) {
        await this.kill(r);
        this.pods.delete(uid);
      }
    }
  }

  /** A pod gone from the API server: its processes end. */
  private async forget(pod: Pod): Promise<void> {
    this.removing.get(pod.metadata.uid)?.abort();
    const running = this.pods.get(pod.metadata.uid);
    if (!running || running.terminating) return;
    await this.kill(running);
    this.pods.delete(pod.metadata.uid);
  }

  /** A pod as the API server has it now: started when new, ended in its grace period and removed when being deleted. */
  private take(pod: Pod): void {
    if (this.stopping.signal.aborted) return;
    const running = this.pods.get(pod.metadata.uid);
    if (pod.metadata.deletionTimestamp) {
      // Each pod ends in its own time: one pod's grace period does not hold up the others.
      if (!running) this.remove(pod);
      else if (!running.terminating) {
        this.host.log?.(`${this.nodeName}: pod ${pod.metadata.name}: ending it`);
        running.terminating = this.terminate(running, pod).catch((e: unknown) =>
          this.host.log?.(`${this.nodeName}: pod ${pod.metadata.name}: ending it failed: ${String(e)}`),
        );
      }
      return;
    }
    if (running) return;
    const r: Running = {
      pod,
      processes: [],
      stopped: false,
      ready: false,
      startedAt: now(),
      initialized: false,
      exited: new Map(),
      logs: new Map(),
      main: new Map(),
      transitions: new Map(),
    };
    this.pods.set(pod.metadata.uid, r);
    void this.run(r).catch((e: unknown) => this.host.log?.(`${this.nodeName}: pod ${pod.metadata.name}: ${String(e)}`));
  }

  private podDir(r: Running): string {
    return join(this.host.dir, r.pod.metadata.uid);
  }

  /** The kubelet's layout: `<logs>/<namespace>_<pod>_<uid>/<container>/0.log`. */
  private logFile(r: Running, container: string): string {
    const { namespace, name, uid } = r.pod.metadata;
    return join(this.host.dir, "logs", `${namespace}_${name}_${uid}`, container, "0.log");
  }

  /** A container's log, if the pod runs here and the container has started. */
  containerLog(namespace: string, pod: string, container: string): ContainerLogRef | undefined {
    for (const r of this.pods.values()) {
      const m = r.pod.metadata;
      if (m.namespace !== namespace || m.name !== pod || !r.logs.has(container)) continue;
      return { file: this.logFile(r, container), running: () => !r.stopped && !r.exited.has(container) && !r.failed };
    }
    return undefined;
  }

  /** The containers of a pod running here, to name in an error. */
  containersOf(namespace: string, pod: string): string[] | undefined {
    const r = [...this.pods.values()].find(
      (x) => x.pod.metadata.namespace === namespace && x.pod.metadata.name === pod,
    );
    return r && [...(r.pod.spec.initContainers ?? []), ...r.pod.spec.containers].map((c) => c.name);
  }

  /**
   * Makes the pod's directory and volumes, again after a pause while that fails, as a kubelet retries a mount: the
   * API server may be away, or not yet know this node may read the pod's ConfigMap (the Node authorizer learns of a
   * pod a moment after it is bound). False once the pod is stopped first.
   */
  private async prepare(r: Running): Promise<boolean> {
    let pause = this.host.retryMs ?? 1000;
    let said: string | undefined;
    for (;;) {
      if (r.stopped) return false;
      try {
        await mountConfigMaps(this.api, r.pod, this.podDir(r));
        if (said !== undefined) this.host.log?.(`${this.nodeName}: pod ${r.pod.metadata.name}: volumes mounted`);
        return true;
      } catch (e) {
        const text = String(e);
        if (text !== said)
          this.host.log?.(`${this.nodeName}: pod ${r.pod.metadata.name}: volumes not mounted (retrying): ${text}`);
        said = text;
      }
      await new Promise((res) => setTimeout(res, pause));
      pause = Math.min(pause * 2, 10_000);
    }
  }

  private async run(r: Running): Promise<void> {
    if (!(await this.prepare(r))) return;
    const deadline = r.pod.spec.activeDeadlineSeconds;
    if (deadline !== undefined) {
      r.deadlineTimer = setTimeout(() => void this.expire(r, deadline).catch(() => undefined), deadline * 1000);
      r.deadlineTimer.unref();
    }
    await this.report(r);
    // Init containers run in order; a failed one runs again after a pause, as with restartPolicy Always.
    for (const c of r.pod.spec.initContainers ?? []) {
      for (;;) {
        if (r.stopped || r.failed) return;
        const code = await this.exec(r, c, commandOf(c), 0, await this.logOf(r, c));
        if (code === 0) break;
        r.initError = `init container ${c.name} exited ${code}`;
        this.host.log?.(`${this.nodeName}: pod ${r.pod.metadata.name}: ${r.initError}`);
        if (endsItself(r)) {
          r.failed = { reason: "Error", message: r.initError };
          await this.report(r);
          return;
        }
        await this.report(r);
        await new Promise((res) => setTimeout(res, 5000));
      }
    }
    r.initialized = true;
    r.initError = undefined;
    for (const c of r.pod.spec.containers) {
      const log = await this.logOf(r, c);
      const child = this.spawn(r, c, commandOf(c), log);
      r.processes.push(child);
      r.main.set(c.name, child);
      void this.watchExit(r, c, child, log);
    }
    await this.report(r);
    const probed = r.pod.spec.containers.find((c) => c.readinessProbe?.exec);
    if (!probed?.readinessProbe?.exec) {
      r.ready = true;
      await this.report(r);
      return;
    }
    const probe = probed.readinessProbe;
    const exec = probe.exec;
    if (!exec) return;
    // As the kubelet: readiness flips after failureThreshold failures (or successThreshold successes) in a row.
    let streak = 0;
    const check = async () => {
      if (r.stopped) return;
      const ok = (await this.exec(r, probed, [...exec.command], (probe.timeoutSeconds ?? 1) * 1000)) === 0;
      streak = ok === r.ready ? 0 : streak + 1;
      if (streak >= (ok ? (probe.successThreshold ?? 1) : (probe.failureThreshold ?? 3))) {
        streak = 0;
        r.ready = ok;
        await this.report(r);
      }
      if (!r.stopped)
        r.probeTimer = setTimeout(() => void check().catch(() => undefined), (probe.periodSeconds ?? 10) * 1000);
    };
    await check();
  }

  private async logOf(r: Running, c: Container): Promise<ContainerLogWriter> {
    const log = r.logs.get(c.name) ?? (await ContainerLogWriter.open(this.logFile(r, c.name)));
    r.logs.set(c.name, log);
    return log;
  }

  /** Records a container's end once its output is in its log, and ends the pod when it was the last. */
  private async watchExit(r: Running, c: Container, child: ChildProcess, log: ContainerLogWriter): Promise<void> {
    const logged = Promise.all([
      child.stdout && log.attach(child.stdout, "stdout"),
      child.stderr && log.attach(child.stderr, "stderr"),
    ]);
    const code = await new Promise<number>((resolve) => {
      child.once("error", () => resolve(128));
      child.once("exit", (c2, signal) => resolve(c2 ?? (signal ? 137 : 1)));
    });
    // Its last output, unless a process it left behind holds the pipes open: then it has ended all the same.
    await Promise.race([logged, new Promise((res) => setTimeout(res, 2000).unref())]);
    if (r.stopped && !r.terminating) return;
    r.exited.set(c.name, { code, at: now() });
    if (r.terminating) return; // terminate() reports the end
    if (r.exited.size === r.pod.spec.containers.length) {
      if (r.deadlineTimer) clearTimeout(r.deadlineTimer);
      r.ready = false;
      await this.report(r);
    }
  }

  /** `activeDeadlineSeconds` ran out: the kubelet kills the pod's containers and fails it. */
  private async expire(r: Running, seconds: number): Promise<void> {
    if (r.stopped || r.failed || r.exited.size === r.pod.spec.containers.length) return;
    r.failed = {
      reason: "DeadlineExceeded",
      message: `Pod was active on the node longer than the specified deadline (${seconds} s)`,
    };
    r.ready = false;
    for (const p of r.processes) p.kill("SIGKILL");
    await this.report(r);
  }

  private spawn(r: Running, c: Container, words: readonly string[], log?: ContainerLogWriter): ChildProcess {
    return spawnContainer(this.host, this.podDir(r), c, words, log);
  }

  /** Runs a command to its end (bounded by `timeoutMs` when not 0); its exit code, 127 when it cannot start. */
  private async exec(
    r: Running,
    c: Container,
    words: readonly string[],
    timeoutMs: number,
    log?: ContainerLogWriter,
  ): Promise<number> {
    const child = this.spawn(r, c, words, log);
    r.processes.push(child);
    try {
      return await untilExit(child, timeoutMs, log);
    } finally {
      const i = r.processes.indexOf(child);
      if (i >= 0) r.processes.splice(i, 1);
    }
  }

  /**
   * A deleted (or evicted) pod ends as a kubelet ends it: SIGTERM to each container, SIGKILL to
   * those still running when the grace period runs out, the containers' ends written to the
   * pod's status, and then the pod removed.
   */
  private async terminate(r: Running, pod: Pod): Promise<void> {
    const grace = pod.metadata.deletionGracePeriodSeconds ?? r.pod.spec.terminationGracePeriodSeconds ?? 30;
    r.stopped = true;
    if (r.probeTimer) clearTimeout(r.probeTimer);
    if (r.deadlineTimer) clearTimeout(r.deadlineTimer);
    await endProcesses(r.processes, grace * 1000);
    // What watchExit records may lag the exit by the container's last output: every container has an end here.
    for (const [name, p] of r.main)
      if (!r.exited.has(name))
        r.exited.set(name, { code: p.exitCode ?? (p.signalCode === "SIGKILL" ? 137 : 143), at: now() });
    r.ready = false;
    if (r.initialized) await this.report(r);
    await this.kill(r);
    this.remove(pod);
  }

  /**
   * The kubelet's last word on a graceful deletion: the containers are gone, remove the pod now. In the background,
   * beside the event queue, tried again until the pod is seen gone (a DELETED event, or absent from a list): its object
   * does not change once its end is written, so no later event would bring it back here, and a drain would wait on it
   * for ever.
   */
  private remove(pod: Pod): void {
    const uid = pod.metadata.uid;
    this.pods.delete(uid);
    if (this.removing.has(uid)) return;
    const gone = new AbortController();
    this.removing.set(uid, gone);
    void deletePodUntilGone(this.api, pod, AbortSignal.any([gone.signal, this.stopping.signal]), {
      ...(this.host.retryMs !== undefined ? { retryMs: this.host.retryMs } : {}),
      log: (line) => this.host.log?.(`${this.nodeName}: pod ${pod.metadata.name}: ${line}`),
    }).finally(() => this.removing.delete(uid));
  }

  private async kill(r: Running): Promise<void> {
    r.stopped = true;
    if (r.probeTimer) clearTimeout(r.probeTimer);
    if (r.deadlineTimer) clearTimeout(r.deadlineTimer);
    await endProcesses(r.processes, 5000);
    await Promise.all([...r.logs.values()].map((l) => l.close()));
    await rm(this.podDir(r), { recursive: true, force: true });
    // The kubelet removes a deleted pod's logs with it.
    await rm(dirname(dirname(this.logFile(r, "x"))), { recursive: true, force: true });
  }

  /** Writes the pod's status as a kubelet would (`podStatus`). */
  private async report(r: Running): Promise<void> {
    const status = podStatus(r, now());
    await this.api
      .patch(
        `/api/v1/namespaces/${r.pod.metadata.namespace}/pods/${r.pod.metadata.name}/status`,
        { status },
        "strategic",
      )
      .catch((e: unknown) => {
        this.host.log?.(`${this.nodeName}: pod ${r.pod.metadata.name}: status not written: ${String(e)}`);
      });
  }
}
