import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LifecycleEvent } from "../lifecycle";
import { outcomeWatcher, startsHostTimeout } from "./rollout";

const at = "2026-01-01T00:00:00Z";
const started = (version: string): LifecycleEvent => ({
  type: "apply-started",
  at,
  template: { name: "svc", version },
  steps: 2,
  resumed: false,
});
const converged = (version: string): LifecycleEvent => ({
  type: "apply-converged",
  at,
  template: { name: "svc", version },
  changed: true,
});
const failed: LifecycleEvent = {
  type: "apply-failed",
  at,
  component: "app",
  phase: "install",
  command: "install.sh",
  exitCode: 1,
  errorTail: "boom\n",
};

describe("a host's outcome in a rollout", () => {
  it("is a failure when a run of the target fails", () => {
    const watch = outcomeWatcher({ template: "svc", templateVersion: "3" });
    assert.equal(watch(started("3")), undefined);
    assert.deepEqual(watch(failed), { ok: false, step: "app install: install.sh", error: "exit 1: boom" });
  });

  it("ignores a retry of the previous target failing after the rollout began", () => {
    const watch = outcomeWatcher({ template: "svc", templateVersion: "3" });
    assert.equal(watch(started("2")), undefined);
    assert.equal(watch(failed), undefined);
    assert.equal(watch(failed), undefined, "a failure seen before any run started is not the target's either");
    assert.equal(watch(started("3")), undefined);
    assert.deepEqual(watch(converged("3")), { ok: true });
  });

  it("succeeds only when the target converges", () => {
    const watch = outcomeWatcher({ template: "svc", templateVersion: "3" });
    assert.equal(watch(converged("2")), undefined);
    assert.deepEqual(watch(converged("3")), { ok: true });
  });
});

describe("when a host's convergence timeout starts in a rollout the DaemonSet controller paces", () => {
  const target = { template: "svc", templateVersion: "3" };

  it("at the host's first run of the target, not before its turn", () => {
    assert.equal(startsHostTimeout(target, started("3")), true);
    assert.equal(startsHostTimeout(target, converged("3")), false, "only a run's start");
  });

  it("not at a run of the previous target, which an agent's retry timer may start after the bump", () => {
    assert.equal(startsHostTimeout(target, started("2")), false);
    assert.equal(startsHostTimeout(target, failed), false);
  });

  it("not at a run of another template of the same version", () => {
    const other: LifecycleEvent = { ...started("3"), template: { name: "other", version: "3" } } as LifecycleEvent;
    assert.equal(startsHostTimeout(target, other), false);
  });
});
