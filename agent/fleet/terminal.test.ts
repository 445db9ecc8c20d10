import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HostView } from "./host";
import { FleetDisplay, fleetTable } from "./terminal";

const host = (state: HostView["state"], extra: Partial<HostView> = {}): HostView => ({
  name: "local-1",
  state,
  desired: { name: "sandbox", version: "1.1.0" },
  components: [{ name: "sandbox-config", version: "2.0.0", state: "installed" }],
  reboots: 0,
  restarts: 0,
  broker: "/tmp/b.sock",
  ...extra,
});

function run(json: boolean): string {
  let out = "";
  const display = new FleetDisplay({ write: (t: string) => (out += t), isTTY: false }, json);
  display.event({ type: "rollout", state: "started", text: "sandbox 1.1.0: 0 new, 1 to roll (maxUnavailable 1)" });
  display.event({ type: "host", host: host("applying") });
  display.event({ type: "host", host: host("applying") });
  display.event({
    type: "timeline",
    event: {
      host: "local-1",
      at: "2026-01-02T03:04:05.000Z",
      kind: "component",
      text: "upgraded sandbox-config 1.0.0 → 2.0.0",
    },
  });
  const failed = host("failed", {
    lastError: {
      component: "sandbox-state",
      phase: "install",
      command: "false",
      exitCode: 1,
      errorTail: "",
      at: "2026-01-02T03:04:06.000Z",
    },
  });
  display.event({ type: "host", host: failed });
  display.settle([failed]);
  display.close();
  return out;
}

describe("the fleet display without a terminal", () => {
  it("writes plain lines a CI log can show, a host line only when its state changes, and the table at the end", () => {
    const out = run(false);
    assert.doesNotMatch(out, /^\{/m, "no JSON without --json");
    assert.ok(!out.includes("\u001b["), "no cursor movement without a terminal");
    assert.match(out, /^\d\d:\d\d:\d\d {2}sandbox 1\.1\.0: 0 new, 1 to roll/m);
    assert.match(out, /^03:04:05 {2}local-1 {4}upgraded sandbox-config 1\.0\.0 → 2\.0\.0$/m);
    assert.equal(out.match(/local-1 {4}applying$/gm)?.length, 1);
    assert.match(out, /local-1 {4}failed: sandbox-state install exited 1$/m);
    assert.match(
      out,
      /^HOST +STATE +TEMPLATE +COMPONENTS +STEP \/ ERROR\nlocal-1 +failed .*sandbox-state install: exit 1$/m,
    );
  });

  it("writes one JSON object per event with --json, and no table", () => {
    const lines = run(true).trim().split("\n");
    assert.ok(lines.every((l) => JSON.parse(l) !== null));
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { type: string }).type),
      ["rollout", "host", "timeline", "host"],
    );
  });
});

describe("the fleet table", () => {
  it("shows a draining host with what it evicted and what it waits for", () => {
    const draining = host("draining", {
      drain: {
        reasons: ["sandbox-service 1.1.0 upgrade restarts the container runtime"],
        evicted: 1,
        waitingFor: ["default/web-b (PodDisruptionBudget default/web-pdb: needs 3 healthy pods)"],
        since: "2026-01-02T03:04:05.000Z",
      },
    });
    const row = fleetTable([draining]).split("\n")[1] ?? "";
    assert.match(row, /^local-1\s+draining\s+/);
    assert.match(
      row,
      /draining: 1 evicted, waiting for default\/web-b \(PodDisruptionBudget default\/web-pdb: needs 3 healthy pods\)$/,
    );
  });
});
