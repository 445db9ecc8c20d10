import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationError } from "../agent/common/errors";
import { parseFleetConfig, secretKeys } from "./config";

const valid = {
  cluster: { name: "dev", join: { method: "kubeadm", apiServer: "https://10.0.0.4:6443", caCertHash: `sha256:${"a".repeat(64)}`, tokenId: "abcdef", tokenSecret: "joinToken" } },
  content: { template: "sandbox", templateVersion: "1.0.0", publish: { to: "blob", resourceGroup: "rg", storageAccount: "winfleetsa" } },
  agent: { version: "0.1.0", bundle: { url: "https://sa.blob.core.windows.net/winfleet/agent.tgz", sha256: "b".repeat(64) } },
  pools: [{ name: "win", kind: "azure", location: "westeurope", resourceGroup: "rg", subnetId: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes", count: 2, adminPasswordSecret: "adminPassword" }],
};

function pathsOf(value: unknown): string[] {
  try {
    parseFleetConfig(value);
    return [];
  } catch (e) {
    if (e instanceof ValidationError) return e.issues.map((i) => i.path);
    throw e;
  }
}

describe("stack config", () => {
  it("parses a valid fleet and fills defaults", () => {
    const f = parseFleetConfig(valid);
    const pool = f.pools[0];
    assert.equal(pool?.kind === "azure" && pool.mode, "vmss");
    assert.equal(f.cluster?.namespace, "winfleet-system");
    assert.deepEqual(secretKeys(f), ["adminPassword", "joinToken"]);
  });

  it("names the key path of every bad value", () => {
    const bad = structuredClone(valid) as typeof valid & { pools: Record<string, unknown>[] };
    (bad.pools[0] as Record<string, unknown>).count = -1;
    (bad.pools[0] as Record<string, unknown>).subnetId = "nodes";
    bad.agent.bundle.sha256 = "XYZ";
    assert.deepEqual(pathsOf(bad).sort(), ["winfleet:fleet.agent.bundle.sha256", "winfleet:fleet.pools[0].count", "winfleet:fleet.pools[0].subnetId"]);
  });

  it("refuses node labels the kubelet refuses at start, naming the label", () => {
    const bad = structuredClone(valid) as typeof valid & { pools: Record<string, unknown>[] };
    (bad.pools[0] as Record<string, unknown>).labels = { "node-role.kubernetes.io/worker": "", "example.com/team": "a", "node.kubernetes.io/pool": "win", "topology.kubernetes.io/zone": "z1" };
    assert.deepEqual(pathsOf(bad), ["winfleet:fleet.pools[0].labels.node-role.kubernetes.io/worker"]);
    (bad.pools[0] as Record<string, unknown>).labels = { team: "a b" };
    assert.deepEqual(pathsOf(bad), ["winfleet:fleet.pools[0].labels.team"]);
  });

  it("requires exactly one credential per BYO host and unique pool names", () => {
    const byo = { ...valid, pools: [
      { name: "a", kind: "byo", hosts: [{ name: "h1", address: "10.0.0.5", user: "admin" }] },
      { name: "a", kind: "byo", hosts: [{ name: "h2", address: "10.0.0.6", user: "admin", passwordSecret: "p", privateKeySecret: "k" }] },
    ] };
    assert.deepEqual(pathsOf(byo).sort(), ["winfleet:fleet.pools[0].hosts[0]", "winfleet:fleet.pools[1].hosts[0]", "winfleet:fleet.pools[1].name"]);
  });

  it("rejects unknown keys, with their path", () => {
    assert.deepEqual(pathsOf({ ...valid, extra: 1 }), ["winfleet:fleet"]);
  });
});

describe("the local pool kind", () => {
  it("needs no cluster and no agent when every pool is local", () => {
    const f = parseFleetConfig({ content: { template: "sandbox", templateVersion: "1.0.0" }, pools: [{ name: "local", kind: "local" }] });
    const pool = f.pools[0];
    assert.deepEqual(pool?.kind === "local" && { hosts: pool.hosts, maxUnavailable: pool.maxUnavailable }, { hosts: 3, maxUnavailable: 1 });
  });

  it("requires cluster and agent, naming them, as soon as a pool deploys real nodes", () => {
    const rest: Record<string, unknown> = { ...valid };
    delete rest.cluster;
    delete rest.agent;
    assert.deepEqual(pathsOf({ ...rest, pools: [...valid.pools, { name: "local", kind: "local" }] }).sort(), ["winfleet:fleet.agent", "winfleet:fleet.cluster"]);
  });
});
