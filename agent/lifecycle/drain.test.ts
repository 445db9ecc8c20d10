import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { DEFAULT_DRAIN, type DrainSettings } from "../common";
import {
  type DrainContext,
  type DrainOutcome,
  type EvictionResult,
  type NodeDrainApi,
  drainNode,
  finishDrain,
} from "./drain";
import { type DrainPod, budgetsNamed, podVerdict } from "./drain-pods";
import type { LifecycleEvent } from "./events";
import type { DrainRecord } from "./journal";

type FakePod = DrainPod & { labels: Record<string, string> };

const pod = (name: string, extra: Partial<FakePod> = {}): FakePod => ({
  namespace: "default",
  name,
  uid: `uid-${name}`,
  deleting: false,
  phase: "Running",
  mirror: false,
  controller: { kind: "ReplicaSet", name: "web-1" },
  emptyDir: false,
  labels: { app: "web" },
  ...extra,
});

/** A node's pods and a budget over them, as the API server would keep them; evicted pods leave at the next look. */
class FakeNode implements NodeDrainApi {
  unschedulableNow: boolean | undefined = false;
  readonly calls: string[] = [];
  /** Evictions refused while this says so (a budget with no disruption allowed). */
  blockWhile: () => boolean = () => false;
  /** Requests that fail (the API server away) before one answers. */
  outage = 0;
  constructor(public running: FakePod[]) {}

  /** Answers with `value()`, unless the API server is away. */
  private answer<T>(what: string, value: () => T): Promise<T> {
    this.calls.push(what);
    if (this.outage > 0) {
      this.outage--;
      return Promise.reject(new Error("connect ECONNREFUSED"));
    }
    return Promise.resolve(value());
  }
  unschedulable() {
    return this.answer("get node", () => this.unschedulableNow);
  }
  setUnschedulable(value: boolean) {
    return this.answer(`unschedulable=${value}`, () => void (this.unschedulableNow = value));
  }
  pods(selector: string) {
    return this.answer(`list ${selector}`, () => {
      const listed = this.running.filter((p) => selector === "" || p.labels.app === selector.split("=")[1]);
      this.running = this.running.filter((p) => !p.deleting); // terminated by the next look
      return listed;
    });
  }
  evict(p: Pick<DrainPod, "namespace" | "name" | "uid">) {
    return this.answer(`evict ${p.name}`, (): EvictionResult => {
      if (this.blockWhile())
        return {
          kind: "blocked",
          messages: ["The disruption budget web-pdb needs 2 healthy pods and has 2 currently"],
        };
      if (!this.running.some((x) => x.uid === p.uid)) return { kind: "gone" };
      this.running = this.running.map((x) => (x.uid === p.uid ? { ...x, deleting: true } : x));
      return { kind: "evicted" };
    });
  }
}

/** A journal's drain record and history, events, and a fake clock that moves only when the drain sleeps. */
function harness(api: NodeDrainApi | undefined, settings: Partial<DrainSettings> = {}, start?: DrainRecord) {
  let record = start;
  let clock = 0;
  const history: string[] = [];
  const events: LifecycleEvent[] = [];
  const sleeps: number[] = [];
  const supersede = new AbortController();
  const ctx: DrainContext = {
    drainer: {
      settings: { ...DEFAULT_DRAIN, ...settings },
      api: () => Promise.resolve(api),
      supersede: supersede.signal,
      clock: () => clock,
      sleep: (ms) => {
        sleeps.push(ms);
        clock += ms;
        return Promise.resolve();
      },
    },
    record: () => record,
    save: (r, event) => {
      record = r;
      history.push(event);
      return Promise.resolve();
    },
    emit: (e) => events.push(e),
    now: () => new Date(clock).toISOString(),
  };
  return { ctx, history, events, sleeps, supersede, record: () => record, kinds: () => events.map((e) => e.type) };
}

const drained: DrainOutcome = { kind: "drained" };

describe("draining the node", () => {
  it("cordons, evicts every pod but DaemonSet and mirror pods, waits until they are gone; the uncordon comes after", async () => {
    const node = new FakeNode([
      pod("web-a"),
      pod("web-b"),
      pod("upgrader", { controller: { kind: "DaemonSet", name: "winfleet-agent-upgrader-local" } }),
      pod("static", { mirror: true, controller: { kind: "Node", name: "n" } }),
    ]);
    const h = harness(node);
    assert.deepEqual(await drainNode(h.ctx, ["rt 2 upgrade restarts the container runtime"]), drained);
    assert.deepEqual(node.calls.slice(0, 4), ["get node", "list ", "unschedulable=true", "list "]);
    assert.deepEqual(
      node.running.map((p) => p.name),
      ["upgrader", "static"],
    );
    assert.equal(h.record()?.state, "drained");
    assert.deepEqual(h.record()?.evicted, ["default/web-a", "default/web-b"]);
    assert.deepEqual(h.kinds(), ["drain-started", "pod-evicted", "pod-evicted", "drain-finished"]);
    const started = h.events[0] as Extract<LifecycleEvent, { type: "drain-started" }>;
    assert.deepEqual(started.pods, ["default/web-a", "default/web-b"]);
    assert.equal(node.unschedulableNow, true, "still cordoned until the host converged");

    assert.equal(await finishDrain(h.ctx), "done");
    assert.equal(node.unschedulableNow, false);
    assert.equal(h.record(), undefined);
    assert.equal(h.events.at(-1)?.type, "uncordoned");
  });

  it("honours a budget: a refused eviction waits 5 s, as kubectl does, and says which budget is in the way", async () => {
    const node = new FakeNode([pod("web-a")]);
    let refusals = 2;
    node.blockWhile = () => refusals-- > 0;
    const h = harness(node);
    assert.deepEqual(await drainNode(h.ctx, ["why"]), drained);
    assert.deepEqual(h.sleeps.slice(0, 2), [5000, 5000]);
    const blocked = h.events.find((e) => e.type === "drain-blocked");
    assert.ok(blocked && blocked.type === "drain-blocked");
    assert.match(
      blocked.waiting[0]?.why ?? "",
      /^PodDisruptionBudget default\/web-pdb: The disruption budget web-pdb needs 2/,
    );
    assert.equal(
      h.events.filter((e) => e.type === "drain-blocked").length,
      1,
      "one Event while the same budget blocks",
    );
  });

  it("a drain past its timeout stops the run before anything disruptive, naming pods and budgets, and uncordons what it cordoned", async () => {
    const node = new FakeNode([pod("web-a")]);
    node.blockWhile = () => true;
    const h = harness(node, { timeoutSeconds: 30 });
    const out = await drainNode(h.ctx, ["why"]);
    assert.equal(out.kind, "failed");
    assert.ok(out.kind === "failed" && out.timedOut);
    assert.match(
      out.kind === "failed" ? out.message : "",
      /did not finish within 30 s: still in the way: default\/web-a \(PodDisruptionBudget default\/web-pdb: /,
    );
    assert.equal(node.unschedulableNow, false, "rolled back: the node takes pods again");
    assert.equal(h.record(), undefined);
    assert.deepEqual(h.kinds(), ["drain-started", "drain-blocked", "drain-failed", "uncordoned"]);
    assert.ok(h.sleeps.reduce((a, b) => a + b, 0) <= 30_000, "never waited past the timeout");
  });

  it("a node someone else cordoned is left cordoned", async () => {
    const node = new FakeNode([pod("web-a")]);
    node.unschedulableNow = true;
    const h = harness(node);
    assert.deepEqual(await drainNode(h.ctx, ["why"]), drained);
    assert.equal(h.record()?.cordoned, false);
    await finishDrain(h.ctx);
    assert.equal(node.unschedulableNow, true);
    assert.ok(!node.calls.some((c) => c.startsWith("unschedulable=")), "never touched the flag");
    const last = h.events.at(-1);
    assert.ok(last?.type === "uncordoned" && last.left);
  });

  it("stops at pods it may not evict (no controller, emptyDir data) unless force or deleteEmptyDirData allow them", async () => {
    const pods = () => [pod("web-a"), pod("lonely", { controller: undefined }), pod("cache", { emptyDir: true })];
    const refused = harness(new FakeNode(pods()));
    const out = await drainNode(refused.ctx, ["why"]);
    assert.equal(out.kind, "failed");
    assert.match(
      out.kind === "failed" ? out.message : "",
      /default\/lonely \(declares no controller.*default\/cache \(uses emptyDir/,
    );
    assert.equal(
      refused.events.filter((e) => e.type === "pod-evicted").length,
      0,
      "as kubectl drain: nothing evicted when a pod may not be",
    );
    const allowed = harness(new FakeNode(pods()), { force: true, deleteEmptyDirData: true });
    assert.deepEqual(await drainNode(allowed.ctx, ["why"]), drained);
    assert.equal(allowed.record()?.evicted.length, 3);
  });

  it("evicts only what the pod selector selects", async () => {
    const node = new FakeNode([pod("web-a"), pod("db-a", { labels: { app: "db" } })]);
    const h = harness(node, { podSelector: "app=web" });
    assert.deepEqual(await drainNode(h.ctx, ["why"]), drained);
    assert.deepEqual(h.record()?.evicted, ["default/web-a"]);
    assert.ok(node.calls.includes("list app=web"));
  });

  it("resumes where the journal says it stood: no second cordon, no second Event for what was evicted", async () => {
    const node = new FakeNode([pod("web-b")]);
    node.unschedulableNow = true;
    const start: DrainRecord = {
      state: "evicting",
      cordoned: true,
      startedAt: "t",
      reasons: ["why"],
      evicted: ["default/web-a"],
      waiting: [],
    };
    const h = harness(node, {}, start);
    assert.deepEqual(await drainNode(h.ctx, ["why"]), drained);
    assert.ok(!node.calls.includes("get node") && !node.calls.includes("unschedulable=true"));
    assert.deepEqual(h.kinds(), ["pod-evicted", "drain-finished"]);
    assert.equal(h.record()?.cordoned, true, "still the drain's own cordon, undone after convergence");
  });

  it("waits out an API server that is away, and a cordon intended before a crash is made on resume", async () => {
    const node = new FakeNode([pod("web-a")]);
    node.outage = 3;
    const start: DrainRecord = {
      state: "cordoning",
      cordoned: true,
      startedAt: "t",
      reasons: [],
      evicted: [],
      waiting: [],
    };
    const h = harness(node, {}, start);
    assert.deepEqual(await drainNode(h.ctx, ["why"]), drained);
    assert.equal(node.calls.filter((c) => c === "unschedulable=true").length, 4, "three refused, the fourth made");
    assert.deepEqual(h.sleeps.slice(0, 3), [500, 1000, 2000]);
  });

  it("a new target cuts a waiting drain short: interrupted, still recorded, still cordoned", async () => {
    const node = new FakeNode([pod("web-a")]);
    const h = harness(node);
    node.blockWhile = () => {
      h.supersede.abort();
      return true;
    };
    assert.deepEqual(await drainNode(h.ctx, ["why"]), { kind: "interrupted" });
    assert.equal(h.record()?.state, "evicting");
    assert.equal(node.unschedulableNow, true);
  });

  it("drains nothing when it is off or the node has not joined, and then ends without an uncordon", async () => {
    const node = new FakeNode([pod("web-a")]);
    const off = harness(node, { enabled: false });
    assert.deepEqual(await drainNode(off.ctx, ["why"]), drained);
    assert.equal(off.record()?.state, "skipped");
    assert.deepEqual(node.calls, []);
    const unjoined = harness(undefined);
    assert.deepEqual(await drainNode(unjoined.ctx, ["why"]), drained);
    assert.match(unjoined.record()?.note ?? "", /not joined/);
    await finishDrain(unjoined.ctx);
    assert.equal(unjoined.record(), undefined);
    assert.deepEqual(unjoined.kinds(), []);
  });
});

describe("which pods a drain evicts (kubectl drain's filters)", () => {
  it("keeps DaemonSet and mirror pods, evicts finished and terminating pods whatever they are", () => {
    const s = DEFAULT_DRAIN;
    assert.equal(podVerdict(pod("d", { controller: { kind: "DaemonSet", name: "x" } }), s).kind, "stay");
    assert.equal(podVerdict(pod("m", { mirror: true }), s).kind, "stay");
    assert.equal(
      podVerdict(pod("done", { controller: undefined, emptyDir: true, phase: "Succeeded" }), s).kind,
      "evict",
    );
    assert.equal(podVerdict(pod("going", { controller: undefined, deleting: true }), s).kind, "evict");
    assert.equal(podVerdict(pod("bare", { controller: undefined }), s).kind, "refuse");
    assert.equal(podVerdict(pod("bare", { controller: undefined }), { ...s, force: true }).kind, "evict");
  });

  it("reads the budgets out of the API server's refusals", () => {
    assert.deepEqual(
      budgetsNamed([
        "The disruption budget web-pdb needs 5 healthy pods and has 5 currently",
        "The disruption budget db needs 1 healthy pods and has 1 currently",
      ]),
      ["web-pdb", "db"],
    );
  });
});
