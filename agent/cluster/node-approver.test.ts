import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, it } from "node:test";
import type { KubeClient } from "./kube-client";
import { type Csr, judge, runNodeApprover, WINFLEET_TOKEN_GROUP } from "./node-approver";

const csr = (id: string): Csr => ({
  metadata: { name: `csr-${id}` },
  spec: {
    signerName: "kubernetes.io/kube-apiserver-client-kubelet",
    username: `system:bootstrap:${id}`,
    groups: [WINFLEET_TOKEN_GROUP, "system:authenticated"],
    usages: ["digital signature", "client auth"],
    request: Buffer.from("not read").toString("base64"),
  },
});

describe("the node approver's verdict", () => {
  it("leaves a CSR whose token this stack did not make: another stack's approver judges it", () => {
    const names = new Map([["abcdef", { pool: "win", names: ["win-1"] }]]);
    assert.equal(
      judge(csr("zzzzzz"), names, () => false),
      undefined,
    );
  });

  it("judges one whose token it made", () => {
    const names = new Map([["abcdef", { pool: "win", names: ["win-1"] }]]);
    const verdict = judge(csr("abcdef"), names, () => false);
    assert.equal(verdict?.approve, false);
    assert.match(verdict && !verdict.approve ? verdict.reason : "", /^the request cannot be read/);
  });
});

describe("the node approver's loop", () => {
  it("keeps no listener on its signal from one pass to the next", async () => {
    let passes = 0;
    const api = {
      get: () => {
        passes += 1;
        return Promise.resolve({ items: [] });
      },
    } as unknown as KubeClient;
    const stop = new AbortController();
    const running = runNodeApprover(api, "ns", { signal: stop.signal, intervalMs: 1 });
    try {
      while (passes < 30) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.ok(getEventListeners(stop.signal, "abort").length <= 1, "at most the current wait's");
    } finally {
      stop.abort();
      await running;
    }
  });
});
