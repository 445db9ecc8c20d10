import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubeClient } from "../cluster";
import { daemonSetsSettled } from "./daemonset-rollout";

type Status = Record<string, number>;
/** A client whose DaemonSet list answers `statuses` in turn (the last one from then on). */
function client(...statuses: { generation: number; status: Status }[]): { api: KubeClient; reads: () => number } {
  let reads = 0;
  const api = {
    get: (path: string) => {
      assert.equal(path, "/apis/apps/v1/namespaces/ns/daemonsets");
      const s = statuses[Math.min(reads++, statuses.length - 1)];
      return Promise.resolve({ items: [{ metadata: { name: "up", generation: s?.generation }, status: s?.status }] });
    },
  } as unknown as KubeClient;
  return { api, reads: () => reads };
}

const rolled = { observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3 };

describe("a DaemonSet rollout's end", () => {
  it("waits for the controller to see the change and for every pod updated and available", async () => {
    const { api, reads } = client(
      { generation: 2, status: { ...rolled, observedGeneration: 1 } },
      { generation: 2, status: { ...rolled, numberAvailable: 2 } },
      { generation: 2, status: rolled },
    );
    await daemonSetsSettled(api, "ns", new AbortController().signal);
    assert.equal(reads(), 3);
  });

  it("names what still rolls once the time is up", async () => {
    const { api } = client({ generation: 2, status: { ...rolled, numberAvailable: 2 } });
    await assert.rejects(daemonSetsSettled(api, "ns", new AbortController().signal, 0), /up \(2 of 3 available\)/);
  });

  it("ends early when stopped", async () => {
    const { api, reads } = client({ generation: 2, status: { ...rolled, updatedNumberScheduled: 1 } });
    await daemonSetsSettled(api, "ns", AbortSignal.abort());
    assert.equal(reads(), 1);
  });
});
