import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Csr, judge, WINFLEET_TOKEN_GROUP } from "./node-approver";

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
