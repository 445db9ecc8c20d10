/**
 * The agent's reports to Kubernetes: a LifecycleObserver that turns the
 * lifecycle events into Events on the Node (queued on disk first, so none it
 * accepted is lost to a crash or an unreachable API server), and keeps the
 * Node's winfleet annotations and `WinfleetReady` condition current. `event()`
 * never waits and never throws; one background loop sends, rate-limited by a
 * token bucket, backing off while the API server cannot be reached.
 */
import { type ConfinedDir, type Logger, errorMessage } from "../common";
import type { LifecycleEvent, LifecycleObserver } from "../lifecycle";
import { type NodeApi, NodeApiError } from "./node-api";
import { type QueuedReport, ReportQueue } from "./queue";
import {
  CONDITION_TYPE,
  type DesiredNodeState,
  type NodeFacts,
  desiredNodeState,
  eventReport,
  foldFacts,
} from "./reports";

/** What a reporter needs. */
export interface ReporterOptions {
  readonly api: () => Promise<NodeApi>;
  readonly nodeName: string;
  /** Where the Node's Events go (the kubelet uses `default`). */
  readonly namespace: string;
  /** Where reports wait: a path, or the agent's state directory's `report-queue`, reached by its walk. */
  readonly queueDir: string | ConfinedDir;
  readonly queueLimit: number;
  readonly eventsPerSecond: number;
  readonly burst: number;
  readonly maxBackoffMs: number;
  readonly stopTimeoutMs: number;
  readonly log: Logger;
  /** Injected for tests. */
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

/** The Event object for a queued report. */
export function eventObject(r: QueuedReport, nodeName: string, namespace: string): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: r.name, namespace },
    // As the kubelet reports about its Node: the Node's uid is its name.
    involvedObject: { apiVersion: "v1", kind: "Node", name: nodeName, uid: nodeName },
    type: r.type,
    reason: r.reason,
    message: r.message,
    count: r.count,
    firstTimestamp: r.first,
    lastTimestamp: r.last,
    source: { component: "winfleet-agent", host: nodeName },
    reportingComponent: "winfleet.io/agent",
    reportingInstance: nodeName,
  };
}

/** Reports to the Node's Events, annotations and condition. */
export class Reporter implements LifecycleObserver {
  private readonly queue: ReportQueue;
  private facts: NodeFacts = {};
  private pendingNode: DesiredNodeState | undefined;
  private sentCondition: string | undefined;
  private tokens: number;
  private refilledAt: number;
  private api: NodeApi | undefined;
  private loop: Promise<void> | undefined;
  private wake = new AbortController();
  private stopping = false;
  /** Set by every kick: the loop makes another pass. */
  private dirty = false;
  /** When stopping, the time past which nothing more is sent (the rest stays queued). */
  private stopBy: number | undefined;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;

  constructor(private readonly o: ReporterOptions) {
    this.queue = new ReportQueue(o.queueDir, { limit: o.queueLimit, nodeName: o.nodeName, log: o.log });
    this.now = o.now ?? Date.now;
    this.sleep = o.sleep ?? defaultSleep;
    this.tokens = o.burst;
    this.refilledAt = this.now();
  }

  /** Reports waiting on disk. */
  get queued(): number {
    return this.queue.length;
  }

  /** Takes an event: queued durably before it returns. */
  event(e: LifecycleEvent): void {
    try {
      const report = eventReport(e);
      if (report) this.queue.append(report);
      const facts = foldFacts(this.facts, e);
      if (facts !== this.facts) {
        this.facts = facts;
        this.pendingNode = desiredNodeState(facts) ?? this.pendingNode;
      }
      this.kick();
    } catch (err) {
      this.o.log.error("could not queue a report", { error: errorMessage(err) });
    }
  }

  /** Starts sending (what a previous run left queued goes first). */
  start(): void {
    this.kick();
  }

  /** Sends what it can within the stop timeout, then stops; what is left stays queued for the next start. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopBy = this.now() + this.o.stopTimeoutMs;
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, this.o.stopTimeoutMs).unref());
    this.kick();
    await Promise.race([this.loop ?? Promise.resolve(), deadline]);
    this.wake.abort();
    await this.loop;
  }

  private kick(): void {
    this.wake.abort();
    this.dirty = true;
    if (this.loop) return;
    this.loop = (async () => {
      while (this.dirty) {
        this.dirty = false;
        await this.run();
      }
    })()
      // Nothing the API server sends may end the process: a failure here leaves the reports queued.
      .catch((e: unknown) =>
        this.o.log.warn("report loop failed; reports stay queued", {
          error: errorMessage(e),
          queued: this.queue.length,
        }),
      )
      .finally(() => {
        this.loop = undefined;
        // Something arrived between the last pass and this one ending.
        if (this.dirty && !this.stopping) this.kick();
      });
  }

  private async run(): Promise<void> {
    let backoff = 500;
    for (;;) {
      this.wake = new AbortController();
      if (this.stopBy !== undefined && this.now() >= this.stopBy) return;
      const head = this.queue.head();
      if (head === undefined && this.pendingNode === undefined) return;
      try {
        this.api ??= await this.o.api();
        if (this.pendingNode !== undefined) await this.sendNode(this.pendingNode);
        else if (head !== undefined) await this.sendEvent(head);
        backoff = 500;
      } catch (err) {
        const retry = !(err instanceof NodeApiError) || err.retryable;
        this.o.log.warn(
          retry ? "Kubernetes API unavailable; reports stay queued" : "Kubernetes refused a report; dropped",
          { error: errorMessage(err), queued: this.queue.length },
        );
        if (!retry) {
          if (this.pendingNode !== undefined) this.pendingNode = undefined;
          else if (head !== undefined) this.queue.settle(head.seq, true);
          continue;
        }
        if (this.stopping) return;
        await this.sleep(backoff, this.wake.signal);
        backoff = Math.min(backoff * 2, this.o.maxBackoffMs);
      }
    }
  }

  // Token bucket: `burst` requests at once, then `eventsPerSecond`.
  private async take(): Promise<void> {
    for (;;) {
      const now = this.now();
      this.tokens = Math.min(this.o.burst, this.tokens + ((now - this.refilledAt) / 1000) * this.o.eventsPerSecond);
      this.refilledAt = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await this.sleep(Math.ceil(((1 - this.tokens) / this.o.eventsPerSecond) * 1000), new AbortController().signal);
    }
  }

  private async sendEvent(head: QueuedReport): Promise<void> {
    await this.take();
    this.queue.begin(head.seq);
    try {
      await (this.api as NodeApi).createEvent(this.o.namespace, eventObject(head, this.o.nodeName, this.o.namespace));
      this.queue.settle(head.seq, true);
    } catch (err) {
      this.queue.settle(head.seq, false);
      throw err;
    }
  }

  private async sendNode(state: DesiredNodeState): Promise<void> {
    await this.take();
    await (this.api as NodeApi).patchNode(this.o.nodeName, { metadata: { annotations: state.annotations } });
    const key = `${state.condition.status}|${state.condition.reason}|${state.condition.message}`;
    const now = new Date(this.now()).toISOString();
    await this.take();
    await (this.api as NodeApi).patchNodeStatus(this.o.nodeName, {
      status: {
        conditions: [
          {
            type: CONDITION_TYPE,
            ...state.condition,
            lastHeartbeatTime: now,
            lastTransitionTime: this.sentCondition === key ? undefined : state.since,
          },
        ],
      },
    });
    this.sentCondition = key;
    if (this.pendingNode === state) this.pendingNode = undefined;
  }
}
