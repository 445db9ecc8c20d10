import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Running } from "./pod-model";
import { podStatus } from "./pod-status";

const running = (): Running => ({
  pod: {
    metadata: { name: "p", namespace: "ns", uid: "u" },
    spec: { nodeName: "n", containers: [{ name: "c" }] },
  } as unknown as Running["pod"],
  processes: [],
  stopped: false,
  ready: false,
  startedAt: "2026-01-01T00:00:00Z",
  initialized: true,
  exited: new Map(),
  logs: new Map(),
  main: new Map(),
  transitions: new Map(),
});

type Status = { phase: string; conditions: { type: string; status: string; lastTransitionTime: string }[] };
const ready = (s: Record<string, unknown>) => (s as Status).conditions.find((c) => c.type === "Ready");

describe("a pod's status as the kubelet writes it", () => {
  it("moves a condition's lastTransitionTime only when its status changes", () => {
    const r = running();
    assert.deepEqual(ready(podStatus(r, "2026-01-01T00:00:01Z")), {
      type: "Ready",
      status: "False",
      lastTransitionTime: "2026-01-01T00:00:01Z",
      reason: "ContainersNotReady",
    });
    r.ready = true;
    assert.equal(ready(podStatus(r, "2026-01-01T00:00:05Z"))?.lastTransitionTime, "2026-01-01T00:00:05Z");
    const again = podStatus(r, "2026-01-01T00:00:30Z");
    assert.equal(ready(again)?.lastTransitionTime, "2026-01-01T00:00:05Z", "Ready since 00:00:05, whenever reported");
    assert.equal((again as Status).phase, "Running");
    r.ready = false;
    assert.equal(ready(podStatus(r, "2026-01-01T00:00:40Z"))?.lastTransitionTime, "2026-01-01T00:00:40Z");
  });
});
