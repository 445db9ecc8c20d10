import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Diagnosis, Manifest } from "./diagnose";
import { formatSummary, summarize } from "./summary";

const manifest = (missing: Manifest["missing"] = []): Manifest => ({
  format: 1,
  createdAt: "2026-01-01T00:00:00.000Z",
  host: "n",
  platform: "win32",
  agentVersion: "0.1.0",
  root: "C:\\",
  since: "2025-12-31T00:00:00.000Z",
  entries: [],
  missing,
  collectors: [],
  secretValuesMasked: 0,
});

function diagnosis(files: Record<string, unknown>, missing: Manifest["missing"] = []): Diagnosis {
  return {
    manifest: manifest(missing),
    files: new Map(Object.entries(files).map(([k, v]) => [k, Buffer.from(JSON.stringify(v))])),
  };
}

const NOW = new Date("2026-01-01T00:10:00.000Z");

describe("the summary", () => {
  it("puts the failed step first, then drift, reboot, orphans, backlog, services, task and what could not be read", () => {
    const d = diagnosis(
      {
        "agent/status.json": {
          state: "failed",
          agentVersion: "0.1.0",
          template: { name: "win2022", version: "1.2.0" },
          components: [],
          history: [],
          failure: {
            step: 3,
            component: "kubelet",
            version: "1.34.7",
            phase: "post_upgrade",
            command: "& ./install.ps1",
            exitCode: 1,
            timedOut: false,
            errorTail: "line 1\nkubelet.exe: Access is denied\n",
            at: "",
          },
          reboot: { reasons: ["containerd 1.7.25 install asks for a reboot"], requestedAt: "2026-01-01T00:00:00.000Z" },
        },
        "agent/verify.json": {
          drift: true,
          checked: 12,
          items: [{ component: "kubelet", path: "/k/kubelet.ps1", problem: "content" }],
        },
        "windows/pending-reboot.json": { pending: true, reasons: ["pending file renames"] },
        "broker/processes.json": {
          from: "broker",
          processes: [
            {
              name: "rancher-wins-windows-exporter",
              pid: 42,
              startedAt: "2025-12-31T10:00:00Z",
              path: "C:\\e.exe",
              state: "orphaned",
              brokerPid: 7,
            },
          ],
        },
        "agent/report-queue.json": { queued: 17, oldest: "2026-01-01T00:00:00.000Z" },
        "system/services.json": [
          { name: "kubelet", state: "Stopped", startMode: "Auto", exitCode: 1067, serviceExitCode: 0 },
          { name: "containerd", state: "Running", startMode: "Auto" },
          { name: "csiproxy", state: "Stopped", startMode: "Manual" },
        ],
        "windows/agent-task.json": { registered: true, state: "Ready", lastTaskResult: 3010, lastRunTime: "1/1/2026" },
      },
      [
        {
          path: "windows/hns-networks.txt",
          collector: "hns-networks",
          source: "hnsdiag",
          reason: "timed out after 30000 ms; what it collected before is kept",
        },
      ],
    );
    const text = formatSummary(summarize(d, NOW));
    const heads = [
      "FAILED: kubelet 1.34.7 post_upgrade: exited 1",
      "DRIFT: 1 of 12",
      "REBOOT PENDING since",
      "WINDOWS REBOOT PENDING: pending file renames",
      "ORPHANS: 1",
      "REPORT BACKLOG: 17",
      "SERVICES NOT RUNNING: kubelet (Stopped, exit 1067/0)",
      "AGENT NOT RUNNING: scheduled task winfleet-agent is Ready, last result 3010",
      "NOT COLLECTED: 1",
    ];
    const at = heads.map((h) => text.indexOf(h));
    assert.ok(
      at.every((i) => i >= 0),
      text,
    );
    assert.deepEqual(
      [...at].sort((a, b) => a - b),
      at,
      `in order:\n${text}`,
    );
    assert.ok(text.startsWith("FAILED: kubelet"), "the first line names the failure");
    assert.match(text, /kubelet\.exe: Access is denied/);
    assert.doesNotMatch(text, /csiproxy/, "a service not started automatically is not a problem");
    assert.ok(text.split("\n").length <= 40, "one screen");
  });

  it("a young backlog is reports on their way, not a problem", () => {
    const s = summarize(
      diagnosis({ "agent/report-queue.json": { queued: 3, oldest: "2026-01-01T00:09:30.000Z" } }),
      NOW,
    );
    assert.deepEqual(s.problems, []);
    assert.ok(s.fine.includes("report queue: 3 on their way"));
  });

  it("names a reboot loop: the same reboot, or the same interrupted step, again and again", () => {
    const entry = (event: string, detail: string): { at: string; event: string; detail: string } => ({
      at: "2026-01-01T00:00:00Z",
      event,
      detail,
    });
    const history = [
      entry("apply-planned", "t 1"),
      ...[1, 2, 3].map(() =>
        entry("step-interrupted", "step 4 (hns-reset install: ./reset.ps1) did not finish; running it again"),
      ),
      entry("reboot-done", "continuing"),
    ];
    const s = summarize(
      diagnosis({
        "agent/status.json": {
          state: "applying",
          agentVersion: "0.1.0",
          template: { name: "t", version: "1" },
          components: [],
          history,
        },
      }),
      NOW,
    );
    assert.match(
      formatSummary(s),
      /^REBOOT LOOP: 3 times in the recent history — step-interrupted: step 4 \(hns-reset install/m,
    );
    const once = summarize(
      diagnosis({
        "agent/status.json": {
          state: "converged",
          agentVersion: "0.1.0",
          template: null,
          components: [],
          history: [entry("reboot-required", "x install asks for a reboot")],
        },
      }),
      NOW,
    );
    assert.deepEqual(once.problems, []);
  });

  it("an agent installed as a service has no scheduled task, and that is not a problem", () => {
    const files = {
      "windows/agent-task.json": { registered: false },
      "system/services.json": [{ name: "winfleet-agent", state: "Running", startMode: "Auto" }],
    };
    assert.deepEqual(summarize(diagnosis(files), NOW).problems, []);
    assert.match(
      formatSummary(summarize(diagnosis({ "windows/agent-task.json": { registered: false } }), NOW)),
      /^AGENT NOT REGISTERED/,
    );
  });
});
