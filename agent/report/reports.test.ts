import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LifecycleEvent } from "../lifecycle";
import { desiredNodeState, eventReport, foldFacts } from "./reports";

const at = "2026-01-01T00:00:00.000Z";

describe("what a drain looks like on the Node", () => {
  it("an Event for the drain started, each pod evicted, a budget in the way, the drain finished or failed, the uncordon", () => {
    const events: LifecycleEvent[] = [
      {
        type: "drain-started",
        at,
        reasons: ["containerd 1.7.25 upgrade restarts the container runtime"],
        cordoned: true,
        pods: ["default/web-a", "default/web-b"],
      },
      { type: "pod-evicted", at, pod: "default/web-a" },
      {
        type: "drain-blocked",
        at,
        waiting: [{ pod: "default/web-b", why: "PodDisruptionBudget default/web-pdb: needs 2 healthy pods" }],
      },
      { type: "drain-finished", at, evicted: 2, durationMs: 12_345 },
      {
        type: "drain-failed",
        at,
        message:
          "the drain did not finish within 60 s: still in the way: default/web-b (PodDisruptionBudget default/web-pdb: …)",
        waiting: [],
      },
      { type: "uncordoned", at, left: false },
      { type: "uncordoned", at, left: true },
    ];
    assert.deepEqual(
      events.map((e) => {
        const r = eventReport(e);
        return `${r?.type} ${r?.reason}: ${r?.message}`;
      }),
      [
        "Normal DrainStarted: Cordoned the node; evicting 2 pods (default/web-a, default/web-b) before: containerd 1.7.25 upgrade restarts the container runtime",
        "Normal PodEvicted: Evicted pod default/web-a",
        "Normal DrainBlocked: The drain waits for default/web-b (PodDisruptionBudget default/web-pdb: needs 2 healthy pods)",
        "Normal DrainFinished: Drained: 2 pods evicted in 12.3 s",
        "Warning DrainFailed: The drain stopped the apply before anything disruptive ran: the drain did not finish within 60 s: still in the way: default/web-b (PodDisruptionBudget default/web-pdb: …)",
        "Normal Uncordoned: Uncordoned the node: it takes pods again",
        "Normal LeftCordoned: The host converged; the node stays cordoned, as it was before the drain",
      ],
    );
  });

  it("WinfleetReady is False, reason Draining, from the drain's start to its end", () => {
    const converged = foldFacts(
      {},
      {
        type: "state",
        at,
        state: "converged",
        template: { name: "win2022", version: "1.0.0" },
        components: [],
        agentVersion: "0.1.0",
        contentDigest: undefined,
      },
    );
    const draining = foldFacts(converged, { type: "drain-started", at, reasons: [], cordoned: true, pods: [] });
    assert.deepEqual(desiredNodeState(draining)?.condition.status, "False");
    assert.deepEqual(desiredNodeState(draining)?.condition.reason, "Draining");
    assert.equal(desiredNodeState(draining)?.annotations["winfleet.io/state"], "draining");
    const drained = foldFacts(draining, { type: "drain-finished", at, evicted: 0, durationMs: 1 });
    assert.deepEqual(desiredNodeState(drained)?.condition.reason, "Applying");
  });
});
