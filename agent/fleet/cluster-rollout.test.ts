import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type WatchedHost, rollThroughCluster } from "./cluster-rollout";
import type { HostOutcome } from "./rollout";
import type { FleetSpec } from "./spec";

const spec: FleetSpec = {
  stack: "local",
  stackFile: "Pulumi.local.yaml",
  pool: "local",
  hosts: 3,
  maxUnavailable: 1,
  content: "content",
  template: "svc",
  templateVersion: "2",
  cluster: true,
};

/** A host whose outcome the test decides, and what its watch was told. */
function host(name: string) {
  let decide: (o: HostOutcome) => void = () => undefined;
  const state = { watching: false, stopped: false };
  const watched: WatchedHost = {
    name,
    watch: (stop) =>
      new Promise<HostOutcome>((resolve) => {
        state.watching = true;
        decide = resolve;
        stop.addEventListener("abort", () => {
          state.stopped = true;
          resolve({ ok: false, step: "(none)", error: "the rollout ended first" });
        });
      }),
  };
  return { watched, state, decide: (o: HostOutcome) => decide(o) };
}

const ok: HostOutcome = { ok: true };

describe("a rollout through the cluster's DaemonSet controller", () => {
  it("watches every host before the deploy moves them, and is done once all converged and the DaemonSets settled", async () => {
    const hosts = ["a", "b", "c"].map(host);
    const order: string[] = [];
    const result = rollThroughCluster({
      spec,
      pending: hosts.map((h) => h.watched),
      deploy: () => {
        order.push(`deploy (watching ${hosts.filter((h) => h.state.watching).length})`);
        return Promise.resolve();
      },
      settled: () => {
        order.push("settled");
        return Promise.resolve();
      },
      converged: (name) => order.push(`converged ${name}`),
      signal: new AbortController().signal,
    });
    await new Promise((r) => setImmediate(r));
    for (const h of [hosts[1], hosts[0], hosts[2]]) h?.decide(ok);
    assert.deepEqual(await result, { kind: "done", hosts: ["b", "a", "c"] });
    assert.deepEqual(order, ["deploy (watching 3)", "converged b", "converged a", "converged c", "settled"]);
  });

  it("halts at the first host that fails, naming its step, and ends the other watches", async () => {
    const hosts = ["a", "b", "c"].map(host);
    const result = rollThroughCluster({
      spec,
      pending: hosts.map((h) => h.watched),
      deploy: () => Promise.resolve(),
      settled: undefined,
      converged: () => undefined,
      signal: new AbortController().signal,
    });
    await new Promise((r) => setImmediate(r));
    hosts[0]?.decide(ok);
    await new Promise((r) => setImmediate(r));
    hosts[1]?.decide({ ok: false, step: "app install: install.sh", error: "exit 1: boom" });
    assert.deepEqual(await result, {
      kind: "halted",
      host: "b",
      step: "app install: install.sh",
      error: "exit 1: boom",
      done: ["a"],
      untouched: ["c"],
    });
    assert.equal(hosts[2]?.state.stopped, true, "c's watch ended with the rollout");
  });

  it("halts at the cluster when the deploy fails, every host untouched", async () => {
    const hosts = ["a", "b"].map(host);
    const result = await rollThroughCluster({
      spec,
      pending: hosts.map((h) => h.watched),
      deploy: () => Promise.reject(new Error("pulumi up failed: quota")),
      settled: undefined,
      converged: () => undefined,
      signal: new AbortController().signal,
    });
    assert.deepEqual(result, {
      kind: "halted",
      host: "(cluster)",
      step: "pulumi up",
      error: "pulumi up failed: quota",
      done: [],
      untouched: ["a", "b"],
    });
    assert.ok(hosts.every((h) => h.state.stopped));
  });

  it("halts at the upgrader DaemonSets when they never settle, every host done", async () => {
    const hosts = ["a"].map(host);
    const result = rollThroughCluster({
      spec,
      pending: hosts.map((h) => h.watched),
      deploy: () => Promise.resolve(),
      settled: () => Promise.reject(new Error("a pod stayed unavailable")),
      converged: () => undefined,
      signal: new AbortController().signal,
    });
    await new Promise((r) => setImmediate(r));
    hosts[0]?.decide(ok);
    assert.deepEqual(await result, {
      kind: "halted",
      host: "(cluster)",
      step: "upgrader DaemonSet rollout",
      error: "a pod stayed unavailable",
      done: ["a"],
      untouched: [],
    });
  });
});
