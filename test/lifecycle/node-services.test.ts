/**
 * `serve`'s re-verify of the node services: after a real apply, the services
 * the installed components declare (their metadata's `services`) are read
 * through a service probe; one stopped or disabled is reported (an Event
 * reason of its own) and started again, one gone is reported for `repair`,
 * and with `restoreServices: false` nothing is started. The probe here holds
 * the services in memory; on Windows it is the Service Control Manager
 * (agent/lifecycle/services.win32.ts).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createLogger } from "../../agent/common";
import type { LifecycleEvent, ServiceProbe } from "../../agent/lifecycle";
import { eventReport } from "../../agent/report/reports";
import { verifyServices } from "../../agent/service/serve";
import { agent, tempDir, writeContent } from "../support";

type Service = { exists: boolean; running: boolean; startType: "automatic" | "manual" | "disabled" };

/** Services in memory; restore makes one start automatically and run. */
function memoryProbe(services: Record<string, Service>): ServiceProbe & { restored: string[] } {
  const restored: string[] = [];
  return {
    restored,
    state: (name) => Promise.resolve(services[name] ?? { exists: false, running: false, startType: "disabled" }),
    restore: (name) => {
      const s = services[name];
      if (!s?.exists) return Promise.reject(new Error(`${name} does not exist`));
      if (name === "stuck") return Promise.reject(new Error("sc start stuck exited 1053"));
      services[name] = { exists: true, running: true, startType: "automatic" };
      restored.push(name);
      return Promise.resolve();
    },
  };
}

async function appliedRoot(): Promise<string> {
  const content = writeContent(
    [
      { name: "runtime", version: "1.0.0", metadata: { services: ["containerd"] } },
      { name: "node", version: "1.0.0", metadata: { services: ["kubelet", "kube-proxy", "stuck"] } },
      { name: "plain", version: "1.0.0" },
    ],
    [{ name: "t", version: "1.0.0", packages: ["runtime_1.0.0", "node_1.0.0", "plain_1.0.0"] }],
  );
  const root = tempDir("services-root-");
  const r = await agent(["apply", "--content", content, "--template", "t", "--root", root]);
  assert.equal(r.code, 0, r.stderr);
  return root;
}

function collect(): { events: LifecycleEvent[]; observer: { event(e: LifecycleEvent): void } } {
  const events: LifecycleEvent[] = [];
  return { events, observer: { event: (e) => events.push(e) } };
}

const log = createLogger("test");

describe("the node services on re-verify", () => {
  it("reports a stopped, a disabled and a missing service, starts the first two again, and then finds nothing", async () => {
    const root = await appliedRoot();
    const probe = memoryProbe({
      containerd: { exists: true, running: true, startType: "automatic" },
      kubelet: { exists: true, running: false, startType: "automatic" },
      "kube-proxy": { exists: true, running: false, startType: "disabled" },
    });
    const { events, observer } = collect();
    await verifyServices({ restoreServices: true }, { root, services: probe }, observer, log);
    const down = events.find((e) => e.type === "service-down");
    assert.ok(down?.type === "service-down");
    assert.deepEqual(
      down.items.map((i) => `${i.component}/${i.service}:${i.problem}`),
      ["node/kubelet:stopped", "node/kube-proxy:disabled", "node/stuck:missing"],
    );
    const restored = events.find((e) => e.type === "service-restored");
    assert.ok(restored?.type === "service-restored");
    assert.deepEqual(restored.services, ["kubelet", "kube-proxy"]);
    assert.deepEqual(probe.restored, ["kubelet", "kube-proxy"]);
    assert.equal(eventReport(down)?.reason, "NodeServiceDown");
    assert.equal(eventReport(down)?.type, "Warning");
    assert.match(eventReport(restored)?.message ?? "", /Started kubelet, kube-proxy again/);

    const again = collect();
    await verifyServices({ restoreServices: true }, { root, services: probe }, again.observer, log);
    assert.deepEqual(
      again.events.map((e) => e.type),
      ["service-down"],
      "only the missing one is left, for repair",
    );
  });

  it("says which service it could not start, as a warning", async () => {
    const root = await appliedRoot();
    const probe = memoryProbe({
      containerd: { exists: true, running: true, startType: "automatic" },
      kubelet: { exists: true, running: true, startType: "automatic" },
      "kube-proxy": { exists: true, running: true, startType: "automatic" },
      stuck: { exists: true, running: false, startType: "automatic" },
    });
    const { events, observer } = collect();
    await verifyServices({ restoreServices: true }, { root, services: probe }, observer, log);
    const restored = events.find((e) => e.type === "service-restored");
    assert.ok(restored?.type === "service-restored");
    assert.deepEqual(restored.failed, [{ service: "stuck", error: "sc start stuck exited 1053" }]);
    assert.equal(eventReport(restored)?.type, "Warning");
  });

  it("starts nothing with restoreServices off, and checks nothing without a probe (off Windows)", async () => {
    const root = await appliedRoot();
    const probe = memoryProbe({ kubelet: { exists: true, running: false, startType: "automatic" } });
    const { events, observer } = collect();
    await verifyServices({ restoreServices: false }, { root, services: probe }, observer, log);
    assert.deepEqual(
      events.map((e) => e.type),
      ["service-down"],
    );
    assert.deepEqual(probe.restored, []);
    const none = collect();
    await verifyServices({ restoreServices: true }, { root }, none.observer, log);
    assert.deepEqual(none.events, []);
  });
});
