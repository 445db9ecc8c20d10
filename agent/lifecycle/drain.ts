/**
 * Draining the node before a disruptive step, and uncordoning it once the host has converged,
 * the way `kubectl drain` and kured do it: cordon, evict every pod the drain may evict through
 * the eviction API (PodDisruptionBudgets honoured: a refused eviction is tried again after 5 s,
 * as kubectl does; each pod's own grace period), wait until they are gone. A drain that cannot
 * finish within its timeout, or meets a pod it may not evict, stops the run before anything
 * disruptive ran and uncordons what it cordoned (as kured does). Every transition is in the
 * journal first (`drain`), so a crash, a reboot or an unreachable API server resumes it; a node
 * someone else cordoned before the drain is left cordoned.
 */
import type { DrainSettings } from "../common";
import {
  type DrainPod,
  type PodVerdict,
  type Waiting,
  budgetsNamed,
  podName,
  podVerdict,
  waitingText,
} from "./drain-pods";
import type { LifecycleEvent, LifecycleObserver } from "./events";
import { type DrainRecord, type Journal, remember, writeJournal } from "./journal";

/** What the API server said to one eviction. */
export type EvictionResult =
  | { readonly kind: "evicted" }
  | { readonly kind: "gone" }
  /** 429: a PodDisruptionBudget would be violated; the causes' messages name it. */
  | { readonly kind: "blocked"; readonly messages: readonly string[] };

/**
 * What the drain asks of the API server, as the node itself: the Node authorizer and
 * NodeRestriction let a node do exactly these to its own Node and the pods bound to it. A failed
 * request throws; an error whose `retryable` is false is not tried again.
 */
export interface NodeDrainApi {
  /** Whether the Node is unschedulable; undefined when no Node of this name is registered. */
  unschedulable(): Promise<boolean | undefined>;
  setUnschedulable(value: boolean): Promise<void>;
  /** The pods bound to the node that match the label selector (empty: all). */
  pods(selector: string): Promise<DrainPod[]>;
  evict(pod: Pick<DrainPod, "namespace" | "name" | "uid">): Promise<EvictionResult>;
}

/** How the engine drains the node it runs on. */
export interface Drainer {
  readonly settings: DrainSettings;
  /** The API as the node, or undefined when the node has no credential yet (it has not joined). */
  api(): Promise<NodeDrainApi | undefined>;
  /** Aborted when a drain should stop waiting (a new target arrived): the run stops, interrupted. */
  readonly supersede?: AbortSignal;
  /** Waits between tries, and the clock the timeout is measured with (tests make both fake). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly clock?: () => number;
}

/** What a drain reads and writes of the run it serves. */
export interface DrainContext {
  readonly drainer: Drainer | undefined;
  /** The journal's drain record. */
  readonly record: () => DrainRecord | undefined;
  /** Puts `record` in the journal (undefined removes it), with a history entry, before it returns. */
  readonly save: (record: DrainRecord | undefined, event: string, detail: string) => Promise<void>;
  readonly emit: (e: LifecycleEvent) => void;
  readonly now: () => string;
  /** Stop (SIGTERM). */
  readonly signal?: AbortSignal;
}

/** How a drain ended. */
export type DrainOutcome =
  | { readonly kind: "drained" }
  | { readonly kind: "failed"; readonly message: string; readonly timedOut: boolean }
  | { readonly kind: "interrupted" };

/** kubectl drain waits 5 s after a refused eviction. */
const BLOCKED_RETRY_MS = 5000;
/** How often pods on their way out are looked at again. */
const POLL_MS = 500;
const MAX_BACKOFF_MS = 10_000;

class Interrupted extends Error {}
class Failed extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
    readonly waiting: readonly Waiting[] = [],
  ) {
    super(message);
  }
}

const retryable = (e: unknown): boolean => (e as { retryable?: boolean }).retryable !== false;
const messageOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Drains the node for `reasons`, resuming what the journal recorded. */
export async function drainNode(ctx: DrainContext, reasons: readonly string[]): Promise<DrainOutcome> {
  const existing = ctx.record();
  if (existing?.state === "drained" || existing?.state === "skipped") return { kind: "drained" };
  const drainer = ctx.drainer;
  // A drain switched off part-way keeps what it cordoned, for the uncordon once the host has converged.
  const skip = async (note: string): Promise<DrainOutcome> => {
    const cordoned = existing?.cordoned ?? false;
    const at = existing?.startedAt ?? ctx.now();
    await ctx.save(
      { state: "skipped", cordoned, startedAt: at, reasons: [...reasons], evicted: [], waiting: [], note },
      "drain-skipped",
      note,
    );
    return { kind: "drained" };
  };
  if (!drainer || !drainer.settings.enabled) return skip("drain is off (drain.enabled: false)");
  const stop = AbortSignal.any([ctx.signal, drainer.supersede].filter((s): s is AbortSignal => s !== undefined));
  const sleep = drainer.sleep ?? defaultSleep;
  const clock = drainer.clock ?? (() => performance.now());
  const started = clock();
  const timeoutMs = drainer.settings.timeoutSeconds * 1000;
  const deadline = timeoutMs > 0 ? started + timeoutMs : Infinity;
  let lastWaiting: readonly Waiting[] = existing?.waiting ?? [];
  const timedOut = (): Failed =>
    new Failed(
      `the drain did not finish within ${drainer.settings.timeoutSeconds} s${lastWaiting.length > 0 ? `: still in the way: ${waitingText(lastWaiting)}` : ""}`,
      true,
      lastWaiting,
    );
  // Tries `call` until it succeeds, the deadline passes or the drain is stopped; an API server away is waited for.
  const attempt = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    let backoff = 500;
    for (;;) {
      if (stop.aborted) throw new Interrupted();
      try {
        return await call();
      } catch (e) {
        if (!retryable(e)) throw new Failed(`${what}: ${messageOf(e)}`, false);
        if (clock() + backoff > deadline) throw timedOut();
        await sleep(backoff, stop);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  };

  let record = existing;
  try {
    const api = await attempt("reading the node's credential", () => drainer.api());
    if (!api) return await skip("the node has no credential yet (not joined): nothing runs on it");
    if (!record) {
      const unschedulable = await attempt("reading the Node", () => api.unschedulable());
      if (unschedulable === undefined) return await skip("no Node of this name is registered: nothing runs on it");
      const pods = (await attempt("listing the node's pods", () => api.pods(drainer.settings.podSelector)))
        .filter((p) => podVerdict(p, drainer.settings).kind !== "stay")
        .map(podName);
      record = {
        state: unschedulable ? "evicting" : "cordoning",
        cordoned: !unschedulable,
        startedAt: ctx.now(),
        reasons: [...reasons],
        evicted: [],
        waiting: [],
      };
      await ctx.save(
        record,
        "drain-started",
        `${unschedulable ? "already cordoned by someone else (left so)" : "cordoning"}: ${reasons.join("; ")}`,
      );
      ctx.emit({ type: "drain-started", at: ctx.now(), reasons: [...reasons], cordoned: !unschedulable, pods });
    }
    if (record.state === "cordoning") {
      await attempt("cordoning the Node", () => api.setUnschedulable(true));
      record = { ...record, state: "evicting" };
      await ctx.save(record, "cordoned", "the node is unschedulable");
    }
    record = await evictAll(api, record, {
      settings: drainer.settings,
      attempt,
      save: ctx.save,
      emit: ctx.emit,
      now: ctx.now,
      wait: async (ms) => {
        if (clock() + ms > deadline) throw timedOut();
        await sleep(ms, stop);
        if (stop.aborted) throw new Interrupted();
      },
      waiting: (w) => (lastWaiting = w),
    });
    await ctx.save({ ...record, state: "drained", waiting: [] }, "drained", `${record.evicted.length} pods evicted`);
    ctx.emit({
      type: "drain-finished",
      at: ctx.now(),
      evicted: record.evicted.length,
      durationMs: Math.round(clock() - started),
    });
    return { kind: "drained" };
  } catch (e) {
    if (e instanceof Interrupted) return { kind: "interrupted" };
    const failure = e instanceof Failed ? e : new Failed(messageOf(e), false);
    ctx.emit({ type: "drain-failed", at: ctx.now(), message: failure.message, waiting: failure.waiting });
    // Nothing disruptive ran: put the node back as it was (kured does the same), so it takes pods again.
    if (record?.cordoned) {
      const undone = await drainer
        .api()
        .then((api) => api?.setUnschedulable(false))
        .then(
          () => true,
          () => false,
        );
      if (undone) ctx.emit({ type: "uncordoned", at: ctx.now(), left: false });
      else {
        // Still cordoned: the record stays, and the next drain (or the uncordon after converging) takes it up.
        await ctx.save({ ...record, waiting: [] }, "drain-failed", `${failure.message}; still cordoned`);
        return { kind: "failed", message: failure.message, timedOut: failure.timedOut };
      }
    }
    await ctx.save(undefined, "drain-failed", failure.message);
    return { kind: "failed", message: failure.message, timedOut: failure.timedOut };
  }
}

interface EvictDeps {
  readonly settings: DrainSettings;
  readonly attempt: <T>(what: string, call: () => Promise<T>) => Promise<T>;
  readonly save: DrainContext["save"];
  readonly emit: DrainContext["emit"];
  readonly now: () => string;
  /** Sleeps, or throws when the deadline would pass or the drain stops. */
  readonly wait: (ms: number) => Promise<void>;
  readonly waiting: (w: readonly Waiting[]) => void;
}

/** Evicts until no pod the drain evicts is left on the node; returns the record as it ends. */
async function evictAll(api: NodeDrainApi, start: DrainRecord, d: EvictDeps): Promise<DrainRecord> {
  let record = start;
  let shown = JSON.stringify(record.waiting);
  for (;;) {
    const pods = await d.attempt("listing the node's pods", () => api.pods(d.settings.podSelector));
    const verdicts = pods.map((p): [DrainPod, PodVerdict] => [p, podVerdict(p, d.settings)]);
    const refused = verdicts.filter(([, v]) => v.kind === "refuse");
    if (refused.length > 0) {
      const waiting = refused.map(([p, v]) => ({ pod: podName(p), why: v.kind === "refuse" ? v.why : "" }));
      throw new Failed(`pods the drain may not evict: ${waitingText(waiting)}`, false, waiting);
    }
    const left = verdicts.filter(([, v]) => v.kind === "evict").map(([p]) => p);
    if (left.length === 0) return record;
    const waiting: Waiting[] = [];
    let blocked = false;
    for (const pod of left) {
      if (pod.deleting) {
        waiting.push({ pod: podName(pod), why: "terminating" });
        continue;
      }
      const r = await d.attempt(`evicting ${podName(pod)}`, () => api.evict(pod));
      if (r.kind === "blocked") {
        blocked = true;
        const budgets = budgetsNamed(r.messages);
        const named = budgets.length > 0 ? budgets.map((b) => `${pod.namespace}/${b}`).join(", ") : "";
        waiting.push({
          pod: podName(pod),
          why: `PodDisruptionBudget ${named ? `${named}: ` : ""}${r.messages.join("; ") || "the eviction would violate a disruption budget"}`,
        });
      } else if (r.kind === "evicted") {
        waiting.push({ pod: podName(pod), why: "terminating" });
        record = { ...record, evicted: [...record.evicted, podName(pod)] };
        await d.save(record, "pod-evicted", podName(pod));
        d.emit({ type: "pod-evicted", at: d.now(), pod: podName(pod) });
      }
    }
    d.waiting(waiting);
    const now = JSON.stringify(waiting.filter((w) => w.why !== "terminating"));
    if (now !== shown && now !== "[]") {
      const blockers = waiting.filter((w) => w.why !== "terminating");
      record = { ...record, waiting: blockers };
      await d.save(record, "drain-blocked", waitingText(blockers));
      d.emit({ type: "drain-blocked", at: d.now(), waiting: blockers });
    }
    shown = now;
    await d.wait(blocked ? BLOCKED_RETRY_MS : POLL_MS);
  }
}

/**
 * Ends a drain once the host has converged: uncordons the node if the drain cordoned it (trying
 * until the API server answers), leaves it cordoned if someone else had, and clears the record.
 */
export async function finishDrain(ctx: DrainContext): Promise<"done" | "interrupted"> {
  const record = ctx.record();
  if (!record) return "done";
  const drainer = ctx.drainer;
  if (!record.cordoned || !drainer) {
    const why = record.state === "skipped" ? (record.note ?? "nothing was drained") : "left cordoned, as it was";
    await ctx.save(undefined, "drain-ended", why);
    if (record.state !== "skipped") ctx.emit({ type: "uncordoned", at: ctx.now(), left: true });
    return "done";
  }
  const stop = ctx.signal ?? new AbortController().signal;
  const sleep = drainer.sleep ?? defaultSleep;
  for (let backoff = 500; ; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
    if (stop.aborted) return "interrupted";
    try {
      const api = await drainer.api();
      await api?.setUnschedulable(false);
      break;
    } catch {
      await sleep(backoff, stop);
    }
  }
  await ctx.save(undefined, "uncordoned", "the node takes pods again");
  ctx.emit({ type: "uncordoned", at: ctx.now(), left: false });
  return "done";
}

/**
 * Once the host has converged: ends a drain the journal records (uncordons the node the drain
 * cordoned). Returns the journal as it then is.
 */
export async function endDrain(
  start: Journal,
  deps: {
    readonly root: string;
    readonly drainer?: Drainer | undefined;
    readonly observer: LifecycleObserver;
    readonly now?: () => Date;
    readonly signal?: AbortSignal;
  },
): Promise<Journal> {
  let journal = start;
  if (!journal.drain) return journal;
  const now = (): string => (deps.now ?? (() => new Date()))().toISOString();
  await finishDrain({
    drainer: deps.drainer,
    record: () => journal.drain,
    save: async (record, event, detail) => {
      journal = remember({ ...journal, drain: record }, event, detail, now());
      await writeJournal(deps.root, journal);
    },
    emit: (e) => deps.observer.event(e),
    now,
    ...(deps.signal ? { signal: deps.signal } : {}),
  });
  return journal;
}
