/**
 * The node stand-in against the real control plane: a sandbox host joins by TLS bootstrap with
 * the bootstrap token and bindings the program deploys (rendered by the same function), its CSR
 * approved and signed by the real controllers; it registers its Node, which turns Ready and has
 * a Lease; and with its own credential the agent's reporter may annotate its own Node and post
 * Events, while a patch of another Node is refused by NodeRestriction.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient } from "../../agent/cluster/kube-client";
import { NodeStandIn, tlsBootstrap } from "../../agent/cluster/node-stand-in";
import { NodeApiError, nodeApiFromKubeconfig } from "../../agent/report/node-api";
import { renderKubeadmJoin } from "../../components/cluster-render";
import { enginesOrSkip, startTestControlPlane } from "../support/engines";

const engines = enginesOrSkip("kubernetes", "etcd");
const TOKEN = { id: "loc4l1", secret: "0123456789abcdef" };
const LABELS = { "kubernetes.io/os": "windows", "winfleet.io/pool": "local" };

type Node = { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; status?: { conditions?: { type: string; status: string }[] } };

describe("the node stand-in", { skip: typeof engines === "string" ? engines : false, timeout: 300_000 }, () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  let dir: string;
  const nodes: NodeStandIn[] = [];
  const join_ = async (name: string) => {
    const credential = await tlsBootstrap({ server: cp.server, caPem: cp.caPem, bootstrapToken: `${TOKEN.id}.${TOKEN.secret}`, nodeName: name, labels: LABELS, dir: join(dir, name) });
    const node = new NodeStandIn({ server: cp.server, caPem: cp.caPem, credential, nodeName: name, labels: LABELS, heartbeatMs: 1000 });
    nodes.push(node);
    await node.start();
    return { node, credential };
  };

  before(async () => {
    if (typeof engines === "string") return;
    dir = mkdtempSync(join(tmpdir(), "winfleet-nodes-"));
    cp = await startTestControlPlane(engines);
    admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
    for (const o of renderKubeadmJoin(TOKEN.id, TOKEN.secret, "local fleet")) {
      const path = o.kind === "Secret" ? "/api/v1/namespaces/kube-system/secrets" : "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
      await admin.post(path, o);
    }
  });

  after(async () => {
    for (const n of nodes) await n.stop();
    await cp?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("joins by TLS bootstrap and keeps a Ready Node with its labels and a Lease", async () => {
    await join_("local-1");
    const node = await admin.get<Node>("/api/v1/nodes/local-1");
    assert.equal(node.metadata.labels["kubernetes.io/os"], "windows");
    assert.equal(node.metadata.labels["winfleet.io/pool"], "local");
    assert.equal(node.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    const lease = await admin.get<{ spec: { holderIdentity: string; renewTime: string } }>("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/local-1");
    assert.equal(lease.spec.holderIdentity, "local-1");
    const first = lease.spec.renewTime;
    const renewed = await admin.waitFor(
      async () => (await admin.get<typeof lease>("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/local-1")).spec.renewTime !== first,
      10_000,
      "the lease to be renewed",
    );
    assert.equal(renewed, true);
  });

  it("reports with the node's own credential: its own Node and Events yes, another Node no", async () => {
    const { credential } = await join_("local-2");
    const api = await nodeApiFromKubeconfig(credential.kubeconfig, 10_000);
    await api.patchNode("local-2", { metadata: { annotations: { "winfleet.io/state": "converged" } } });
    assert.equal((await admin.get<Node>("/api/v1/nodes/local-2")).metadata.annotations?.["winfleet.io/state"], "converged");
    const created = await api.createEvent("default", {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: "local-2.test", namespace: "default" },
      involvedObject: { kind: "Node", name: "local-2", uid: "local-2" },
      reason: "Converged",
      message: "sandbox 1.0.0 applied",
      type: "Normal",
      source: { component: "winfleet-agent", host: "local-2" },
    });
    assert.equal(created, "created");
    const refused = await api.patchNode("local-1", { metadata: { annotations: { "winfleet.io/state": "forged" } } }).catch((e: unknown) => e);
    assert.ok(refused instanceof NodeApiError, `refused: ${String(refused)}`);
    assert.equal(refused.status, 403);
    assert.equal((await admin.get<Node>("/api/v1/nodes/local-1")).metadata.annotations?.["winfleet.io/state"], undefined);
  });
});
