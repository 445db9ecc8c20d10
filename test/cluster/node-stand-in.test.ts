/**
 * The node stand-in against the real control plane: a sandbox host joins by TLS bootstrap with
 * the bootstrap token and bindings the program deploys (rendered by the same function), its CSR
 * approved and signed by the real controllers; it registers its Node, which turns Ready and has
 * a Lease; and with its own credential the agent's reporter may annotate its own Node and post
 * Events, while a patch of another Node is refused by NodeRestriction. A Node deleted while its
 * host runs is registered again, as a kubelet does.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient } from "../../agent/cluster/kube-client";
import { NodeStandIn, tlsBootstrap } from "../../agent/cluster/node-stand-in";
import { PodRunner } from "../../agent/cluster/pod-runner";
import type { LifecycleEvent } from "../../agent/lifecycle/events";
import type { Logger } from "../../agent/common/log";
import { NodeApiError, nodeApiFromKubeconfig } from "../../agent/report/node-api";
import { Reporter } from "../../agent/report/reporter";
import { enginesOrSkip, joinableBy, sleep, startTestControlPlane, tempDir } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd");
const TOKEN = { id: "loc4l1", secret: "0123456789abcdef" };
const LABELS = { "kubernetes.io/os": "windows", "winfleet.io/pool": "local" };

type Node = {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: { type: string; status: string }[] };
};

describe("the node stand-in", { skip: typeof engines === "string" ? engines : false, timeout: 300_000 }, () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  let dir: string;
  let stopApprover = (): void => undefined;
  const nodes: NodeStandIn[] = [];
  const join_ = async (name: string) => {
    const credential = await tlsBootstrap({
      server: cp.server,
      caPem: cp.caPem,
      bootstrapToken: `${TOKEN.id}.${TOKEN.secret}`,
      nodeName: name,
      labels: LABELS,
      dir: join(dir, name),
    });
    const node = new NodeStandIn({
      server: cp.server,
      caPem: cp.caPem,
      credential,
      nodeName: name,
      labels: LABELS,
      heartbeatMs: 1000,
    });
    nodes.push(node);
    await node.start();
    return { node, credential };
  };

  before(async () => {
    if (typeof engines === "string") return;
    dir = tempDir("winfleet-nodes-");
    cp = await startTestControlPlane(engines);
    admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
    stopApprover = await joinableBy(admin, TOKEN, ["local-1", "local-2", "local-3", "local-4", "local-5"]);
  });

  after(async () => {
    stopApprover();
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
    const lease = await admin.get<{ spec: { holderIdentity: string; renewTime: string } }>(
      "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/local-1",
    );
    assert.equal(lease.spec.holderIdentity, "local-1");
    const first = lease.spec.renewTime;
    const renewed = await admin.waitFor(
      async () =>
        (await admin.get<typeof lease>("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/local-1")).spec
          .renewTime !== first,
      10_000,
      "the lease to be renewed",
    );
    assert.equal(renewed, true);
  });

  it("reports with the node's own credential: its own Node and Events yes, another Node no", async () => {
    const { credential } = await join_("local-2");
    const api = await nodeApiFromKubeconfig(credential.kubeconfig, 10_000);
    await api.patchNode("local-2", { metadata: { annotations: { "winfleet.io/state": "converged" } } });
    assert.equal(
      (await admin.get<Node>("/api/v1/nodes/local-2")).metadata.annotations?.["winfleet.io/state"],
      "converged",
    );
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
    const refused = await api
      .patchNode("local-1", { metadata: { annotations: { "winfleet.io/state": "forged" } } })
      .catch((e: unknown) => e);
    assert.ok(refused instanceof NodeApiError, `refused: ${String(refused)}`);
    assert.equal(refused.status, 403);
    assert.equal(
      (await admin.get<Node>("/api/v1/nodes/local-1")).metadata.annotations?.["winfleet.io/state"],
      undefined,
    );
  });

  it("ends a deleted pod as a kubelet does: SIGTERM, SIGKILL only when its grace period ran out, its end written, then removed", async () => {
    await join_("local-4");
    const node = nodes.at(-1) as NodeStandIn;
    const runner = new PodRunner(node.client, "local-4", {
      dir: join(dir, "local-4", "pods"),
      env: {},
      commands: {},
      retryMs: 250,
    });
    runner.start();
    try {
      await admin.waitFor(
        async () => (await admin.getOrUndefined("/api/v1/namespaces/default/serviceaccounts/default")) !== undefined,
        30_000,
        "the default service account",
      );
      const pod = (name: string, script: string) =>
        admin.post("/api/v1/namespaces/default/pods", {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace: "default" },
          spec: {
            nodeName: "local-4",
            terminationGracePeriodSeconds: 3,
            containers: [{ name: "c", image: "sandbox", command: ["sh", "-c", script] }],
          },
        });
      await pod("stubborn", "trap '' TERM; while :; do sleep 0.1; done");
      await pod("polite", "trap 'exit 0' TERM; while :; do sleep 0.1; done");
      type Status = {
        status?: { phase?: string; containerStatuses?: { state: { terminated?: { exitCode: number } } }[] };
      };
      for (const name of ["stubborn", "polite"])
        await admin.waitFor(
          async () => (await admin.get<Status>(`/api/v1/namespaces/default/pods/${name}`)).status?.phase === "Running",
          30_000,
          `${name} running`,
        );
      const seen = new Map<string, { phase?: string; exit?: number; gone?: number }>();
      const watch = admin.watch("/api/v1/namespaces/default/pods", (type, o) => {
        const name = (o.metadata as { name: string }).name;
        const s = (o as Status).status;
        const entry = seen.get(name) ?? {};
        if (type === "DELETED") entry.gone = Date.now();
        const exit = s?.containerStatuses?.[0]?.state.terminated?.exitCode;
        if (exit !== undefined) Object.assign(entry, { phase: s?.phase, exit });
        seen.set(name, entry);
      });
      await watch.ready;
      const deleted = Date.now();
      await admin.delete("/api/v1/namespaces/default/pods/stubborn");
      await admin.delete("/api/v1/namespaces/default/pods/polite");
      await admin.waitFor(
        () => Promise.resolve(seen.get("stubborn")?.gone && seen.get("polite")?.gone ? true : undefined),
        30_000,
        "both pods removed",
      );
      watch.stop();
      const stubborn = seen.get("stubborn") ?? {};
      const polite = seen.get("polite") ?? {};
      assert.ok((stubborn.gone ?? 0) - deleted >= 3000, "the pod that ignores SIGTERM keeps its 3 s grace period");
      assert.equal(stubborn.exit, 137, "then it is killed, and its end is written before it goes");
      assert.ok((polite.gone ?? 0) - deleted < 3000, "the pod that stops on SIGTERM goes at once");
      assert.deepEqual([polite.exit, polite.phase], [0, "Succeeded"]);
    } finally {
      await runner.stop();
    }
  });

  it("registers its Node again, Ready, when the Node is deleted while the host runs", async () => {
    await join_("local-5");
    await admin.delete("/api/v1/nodes/local-5");
    const back = await admin.waitFor(
      async () => {
        const n = await admin.getOrUndefined<Node>("/api/v1/nodes/local-5");
        return n?.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" ? n : undefined;
      },
      30_000,
      "local-5's Node to be registered again and Ready",
    );
    assert.equal(back.metadata.labels["winfleet.io/pool"], "local");
  });

  describe("the agent's reporter under the real Node authorizer", () => {
    const at = (): string => new Date().toISOString();
    const template = { name: "sandbox", version: "1.0.0" };
    const converged: LifecycleEvent[] = [
      { type: "apply-started", at: at(), template, steps: 1, resumed: false },
      { type: "component-installed", at: at(), component: "app", version: "1.0.0" },
      {
        type: "state",
        at: at(),
        state: "converged",
        template,
        components: [{ name: "app", version: "1.0.0", state: "installed" }],
        agentVersion: "0.1.0",
        contentDigest: "ab".repeat(32),
      },
      { type: "apply-converged", at: at(), template, changed: true },
    ];
    const logged: string[] = [];
    const log: Logger = {
      debug() {},
      info() {},
      warn: (m, f) => void logged.push(`${m} ${JSON.stringify(f ?? {})}`),
      error: (m, f) => void logged.push(`${m} ${JSON.stringify(f ?? {})}`),
    };
    const reporter = (kubeconfig: string, nodeName: string) =>
      new Reporter({
        api: () => nodeApiFromKubeconfig(kubeconfig, 5000),
        nodeName,
        namespace: "default",
        queueDir: mkdtempSync(join(dir, "queue-")),
        queueLimit: 1000,
        eventsPerSecond: 100,
        burst: 100,
        maxBackoffMs: 500,
        stopTimeoutMs: 5000,
        log,
      });
    const reasonsOn = async (node: string) =>
      (
        await admin.get<{ items: { reason: string; involvedObject: { name: string } }[] }>(
          "/api/v1/namespaces/default/events",
        )
      ).items
        .filter((e) => e.involvedObject.name === node)
        .map((e) => e.reason);

    it("loses no report while the API server is down: the queue delivers them when it is back", async () => {
      const { credential } = await join_("local-3");
      const r = reporter(credential.kubeconfig, "local-3");
      await cp.stopApiServer();
      try {
        r.start();
        for (const e of converged) r.event(e);
        await sleep(1500);
        assert.ok(r.queued > 0, "the reports wait in the queue while the API server is away");
      } finally {
        await cp.startApiServer();
      }
      await admin.waitFor(
        async () => ((await reasonsOn("local-3")).includes("Converged") && r.queued === 0 ? true : undefined),
        60_000,
        "the queued reports to be delivered",
      );
      const node = await admin.get<Node>("/api/v1/nodes/local-3");
      assert.equal(node.status?.conditions?.find((c) => c.type === "WinfleetReady")?.status, "True");
      await r.stop();
    });

    it("refuses a node's reports about another Node, logs the refusal, and sets nothing on that Node", async () => {
      const local2 = join(dir, "local-2", "kubelet.conf");
      // local-2's credential, reporting as if it were local-1: NodeRestriction refuses the Node patch.
      const r = reporter(local2, "local-1");
      r.start();
      for (const e of converged) r.event(e);
      await admin.waitFor(
        () => Promise.resolve(logged.some((l) => /403|forbidden/i.test(l)) ? true : undefined),
        30_000,
        "the refusal to be logged",
      );
      const node = await admin.get<Node>("/api/v1/nodes/local-1");
      assert.notEqual(
        node.status?.conditions?.find((c) => c.type === "WinfleetReady")?.status,
        "True",
        "local-1's condition is not local-2's to set",
      );
      await r.stop();
    });
  });
});
