/**
 * The Kubernetes reporter against a local API server that serves only the
 * endpoints a node uses, checks verbs, paths, content types and the node's
 * token, and validates every body against the Kubernetes OpenAPI schema
 * (kubernetes-models: types and required fields) — up, down, back, restarted,
 * overflowing, and rate-limited.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { silentLogger as silent } from "../../agent/common/log";
import type { LifecycleEvent } from "../../agent/lifecycle/events";
import { nodeApiFromKubeconfig } from "../../agent/report/node-api";
import { Reporter, type ReporterOptions } from "../../agent/report/reporter";
import { NODE, type Received, apiServer, kubeconfig } from "./fake-api";
import { scratchDir, sleep, waitFor } from "../support";

const scratch = scratchDir("winfleet-report-");

function reporter(port: number, queueDir: string, extra: Partial<ReporterOptions> = {}): Reporter {
  const file = kubeconfig(port, scratch);
  return new Reporter({
    api: () => nodeApiFromKubeconfig(file, 2000),
    nodeName: NODE,
    namespace: "default",
    queueDir,
    queueLimit: 1000,
    eventsPerSecond: 1000,
    burst: 1000,
    maxBackoffMs: 100,
    stopTimeoutMs: 2000,
    log: silent,
    ...extra,
  });
}

const at = (): string => new Date().toISOString();
const installed = (component: string): LifecycleEvent => ({
  type: "component-installed",
  at: at(),
  component,
  version: "1.0.0",
});
const converged: LifecycleEvent[] = [
  { type: "apply-started", at: at(), template: { name: "win2022", version: "1.0.0" }, steps: 4, resumed: false },
  installed("containerd"),
  {
    type: "state",
    at: at(),
    state: "converged",
    template: { name: "win2022", version: "1.0.0" },
    components: [{ name: "containerd", version: "1.0.0", state: "installed" }],
    agentVersion: "0.1.0",
    contentDigest: "ab".repeat(32),
  },
  { type: "apply-converged", at: at(), template: { name: "win2022", version: "1.0.0" }, changed: true },
];
const reasons = (got: Received): string[] => got.events.map((e) => e.reason as string);

describe("the Kubernetes reporter", () => {
  it("creates Events on the Node and sets its annotations and WinfleetReady condition, with the node's own credentials", async () => {
    const api = await apiServer();
    const r = reporter(api.port, join(scratch, "q1"));
    r.start();
    for (const e of converged) r.event(e);
    await waitFor(
      () => api.got.events.length === 3 && api.got.statusPatches.length >= 1,
      5000,
      "three events and the node state",
      25,
    );
    await r.stop();
    await api.close();
    assert.deepEqual(api.got.refused, []);
    assert.deepEqual(reasons(api.got), ["ApplyStarted", "ComponentInstalled", "Converged"]);
    assert.deepEqual(api.got.events[1]?.involvedObject, { apiVersion: "v1", kind: "Node", name: NODE, uid: NODE });
    const annotations = (api.got.nodePatches.at(-1)?.metadata as { annotations: Record<string, string> }).annotations;
    assert.equal(annotations["winfleet.io/template"], "win2022");
    assert.equal(annotations["winfleet.io/state"], "converged");
    assert.equal(annotations["winfleet.io/content-digest"], "ab".repeat(32));
    const condition = (api.got.statusPatches.at(-1)?.status as { conditions: Record<string, string>[] }).conditions[0];
    assert.equal(condition?.type, "WinfleetReady");
    assert.equal(condition?.status, "True");
    assert.deepEqual(readdirSync(join(scratch, "q1")), [], "nothing left queued");
  });

  it("keeps accepting while the API server is down, then delivers everything in order, once each", async () => {
    const probe = await apiServer();
    const port = probe.port;
    await probe.close();
    const dir = join(scratch, "q2");
    const r = reporter(port, dir);
    r.start();
    const names = ["a", "b", "c", "d", "e"];
    for (const n of names) r.event(installed(`component-${n}`));
    assert.equal(
      readdirSync(dir).filter((f) => f.endsWith(".json")).length,
      5,
      "every report on disk before event() returned",
    );
    await sleep(300);
    const api = await apiServer(port);
    await waitFor(() => api.got.events.length === 5, 5000, "all five events", 25);
    await r.stop();
    await api.close();
    assert.deepEqual(
      api.got.events.map((e) => e.message),
      names.map((n) => `Installed component-${n} 1.0.0`),
    );
    assert.equal(new Set(api.got.events.map((e) => (e.metadata as { name: string }).name)).size, 5);
  });

  it("sends after a restart what an earlier run had queued", async () => {
    const probe = await apiServer();
    const port = probe.port;
    await probe.close();
    const dir = join(scratch, "q3");
    const first = reporter(port, dir, { stopTimeoutMs: 100 });
    first.start();
    for (const n of ["x", "y", "z"]) first.event(installed(n));
    await first.stop();
    assert.equal(first.queued, 3);
    const api = await apiServer(port);
    const second = reporter(port, dir);
    second.start();
    await waitFor(() => api.got.events.length === 3, 5000, "the earlier run's events", 25);
    await second.stop();
    await api.close();
    assert.deepEqual(
      api.got.events.map((e) => e.message),
      ["Installed x 1.0.0", "Installed y 1.0.0", "Installed z 1.0.0"],
    );
  });

  it("keeps at most its queue limit on disk, summarising the oldest instead of dropping them", async () => {
    const probe = await apiServer();
    const port = probe.port;
    await probe.close();
    const dir = join(scratch, "q4");
    const r = reporter(port, dir, { queueLimit: 10 });
    r.start();
    r.event({
      type: "apply-failed",
      at: at(),
      component: "kubelet",
      phase: "install",
      command: "start kubelet",
      exitCode: 1,
      errorTail: "no cni",
    });
    for (let i = 0; i < 24; i++) r.event(installed(`c${i}`));
    assert.ok(readdirSync(dir).filter((f) => f.endsWith(".json")).length <= 10);
    const api = await apiServer(port);
    await waitFor(() => r.queued === 0, 5000, "the queue to drain", 25);
    await r.stop();
    await api.close();
    assert.equal(api.got.events.length, 10);
    const summary = api.got.events[0] as { reason: string; type: string; message: string };
    assert.equal(summary.reason, "ReportsSummarized");
    assert.equal(summary.type, "Warning", "a summary holding a failure is a warning");
    assert.match(
      summary.message,
      /16 reports .* ApplyFailed ×1, ComponentInstalled ×15; last warning: kubelet failed in install/,
    );
    assert.equal(api.got.events.at(-1)?.message, "Installed c23 1.0.0");
  });

  it("stops within its stop timeout however much is queued, keeping the rest for the next start", async () => {
    const api = await apiServer();
    const dir = join(scratch, "q6");
    const r = reporter(api.port, dir, { eventsPerSecond: 5, burst: 1, stopTimeoutMs: 300 });
    for (let i = 0; i < 50; i++) r.event(installed(`s${i}`));
    r.start();
    const started = Date.now();
    await r.stop();
    await api.close();
    assert.ok(Date.now() - started < 2000, `stop took ${Date.now() - started} ms`);
    assert.ok(r.queued > 0 && r.queued + api.got.events.length === 50, "what was not sent is still queued");
  });

  it("spaces its requests by the configured rate after the burst", async () => {
    const api = await apiServer();
    let clock = 0;
    const waits: number[] = [];
    const r = reporter(api.port, join(scratch, "q5"), {
      eventsPerSecond: 2,
      burst: 2,
      now: () => clock,
      sleep: (ms) => {
        waits.push(ms);
        clock += ms;
        return Promise.resolve();
      },
    });
    r.start();
    for (let i = 0; i < 6; i++) r.event(installed(`r${i}`));
    await waitFor(() => api.got.events.length === 6, 5000, "six events", 25);
    await r.stop();
    await api.close();
    assert.ok(
      waits.reduce((a, b) => a + b, 0) >= 2000,
      `4 requests past a burst of 2 at 2/s wait 2 s in all (waited ${waits.join(", ")} ms)`,
    );
  });
});
