import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LifecycleEvent } from "../lifecycle";
import { outcomeWatcher } from "./rollout";

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
