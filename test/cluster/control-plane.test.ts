/**
 * The throwaway control plane: the real etcd, kube-apiserver and kube-controller-manager
 * start on loopback with a PKI of their own, authorize as a production cluster does, answer
 * another local user nothing (etcd only to certificates of its own CA, the API server to no
 * anonymous request), and leave no process or port behind when stopped.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { request } from "node:https";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient } from "../../agent/cluster/kube-client";
import {
  canProbeAsAnotherUser,
  enginesOrSkip,
  listenersOf,
  pidsMentioning,
  portOpen,
  probeAsNobody,
  startTestControlPlane,
} from "../support";

const engines = enginesOrSkip("kubernetes", "etcd");

describe("throwaway control plane", { skip: typeof engines === "string" ? engines : false }, () => {
  let cp: ControlPlane;
  let kube: KubeClient;
  let startedMs = 0;

  before(async () => {
    if (typeof engines === "string") return;
    const t0 = Date.now();
    cp = await startTestControlPlane(engines);
    startedMs = Date.now() - t0;
    process.stderr.write(`control plane ready in ${(startedMs / 1000).toFixed(1)} s\n`);
    kube = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
  });

  after(async () => {
    await cp?.stop();
  });

  it("serves the API to the administrator and refuses an anonymous client", async () => {
    const version = await kube.get<{ gitVersion: string }>("/version");
    assert.match(version.gitVersion, /^v1\.34\./);
    const anonymous = await fetch(`${cp.server}/api/v1/namespaces`, { signal: AbortSignal.timeout(5000) }).catch(
      (e: unknown) => e,
    );
    // Node's fetch does not trust the throwaway CA: the refusal is TLS's, which is what a stranger meets too.
    assert.ok(anonymous instanceof Error);
    // Trusting the CA, with no credential: refused everywhere but the public cluster-info ConfigMap, which a joining
    // node reads before it has a credential (authorized by RBAC only where ClusterJoin binds system:anonymous to it).
    const status = (path: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${cp.server}${path}`, { ca: cp.caPem, timeout: 5000 }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end();
      });
    for (const path of ["/version", "/healthz", "/api/v1/namespaces", "/api/v1/namespaces/kube-public/configmaps"])
      assert.equal(await status(path), 401, path);
    assert.equal(await status("/api/v1/namespaces/kube-public/configmaps/cluster-info"), 403, "anonymous, then RBAC's");
  });

  it("authorizes with Node and RBAC and admits with NodeRestriction", async () => {
    const review = await kube.post<{ status: { allowed: boolean } }>(
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: "system:node:somebody",
          groups: ["system:nodes"],
          resourceAttributes: { verb: "delete", resource: "nodes", name: "someone-else" },
        },
      },
    );
    assert.equal(review.status.allowed, false);
    const own = await kube.post<{ status: { allowed: boolean } }>(
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: "system:node:somebody",
          groups: ["system:nodes"],
          resourceAttributes: { verb: "get", resource: "nodes", name: "somebody" },
        },
      },
    );
    assert.equal(own.status.allowed, true);
  });

  it("runs the controllers: the service-account controller gives every namespace its default account", async () => {
    await kube.post("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "cp-test" } });
    const sa = await kube.waitFor(
      () => kube.getOrUndefined("/api/v1/namespaces/cp-test/serviceaccounts/default"),
      30_000,
    );
    assert.ok(sa);
  });

  it(
    "etcd, its peer port and the API server answer nobody: no Secret read, no RBAC written, no /version",
    { skip: !canProbeAsAnotherUser() && "needs root to run a probe as another user" },
    async () => {
      await kube.post("/api/v1/namespaces/kube-system/secrets", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "bootstrap-token-abcdef" },
        type: "bootstrap.kubernetes.io/token",
        stringData: { "token-id": "abcdef", "token-secret": "0123456789abcdef" },
      });
      const listeners = listenersOf(pidsMentioning(cp.dir));
      const ports = listeners.flatMap((l) => (l.kind === "tcp" ? [l.port] : []));
      assert.ok(ports.includes(Number(new URL(cp.server).port)), `the API server is among ${ports.join(", ")}`);
      assert.ok(ports.length >= 3, `etcd's client and peer ports and the API server's: ${ports.join(", ")}`);
      const results = await probeAsNobody(listeners);
      const served = results.filter((r) => r.served);
      assert.deepEqual(served, [], `answered nobody:\n${served.map((r) => `${r.listener}: ${r.detail}`).join("\n")}`);
      // What the etcd proof of concept read and wrote is untouched and unread: the token Secret, RBAC.
      const crbs = await kube.get<{ items: { metadata: { name: string } }[] }>(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      );
      assert.ok(!crbs.items.some((c) => c.metadata.name.includes("unauthenticated")));
    },
  );

  it("collects a pod bound to a Node that is gone (pod GC), so its namespace can be deleted", async () => {
    // What a destroyed stack leaves when its hosts left first: pods of deleted Nodes, which no kubelet will confirm.
    await kube.post("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: "orphans" } });
    await kube.post("/api/v1/namespaces/orphans/pods", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "left" },
      spec: { nodeName: "gone", containers: [{ name: "c", image: "none" }] },
    });
    await kube.delete("/api/v1/namespaces/orphans");
    const gone = await kube.waitFor(
      async () => (await kube.getOrUndefined("/api/v1/namespaces/orphans")) === undefined || undefined,
      180_000,
      "the namespace to be gone",
    );
    assert.equal(gone, true);
  });

  it("restarts its API server on the same port, with what etcd holds intact", async () => {
    const port = Number(new URL(cp.server).port);
    await cp.stopApiServer();
    assert.equal(await portOpen(port), false);
    await cp.startApiServer();
    assert.equal(await portOpen(port), true);
    assert.ok(
      await kube.getOrUndefined("/api/v1/namespaces/cp-test"),
      "the namespace made before the restart is still there",
    );
  });

  it("starts etcd and the API server again after a kill -9, on the same ports and data", async () => {
    for (const name of ["etcd", "kube-apiserver"] as const) {
      const pid = cp.pid(name);
      assert.ok(pid, `${name} runs`);
      process.kill(pid, "SIGKILL");
      await kube.waitFor(
        () => Promise.resolve(cp.restarts(name) === 1 && cp.pid(name) !== pid),
        30_000,
        `${name} started again`,
      );
      const ns = await kube.waitFor(
        () => kube.getOrUndefined("/api/v1/namespaces/cp-test").catch(() => undefined),
        60_000,
        `the API served again after ${name}'s restart`,
      );
      assert.ok(ns, "what etcd held is still there");
    }
  });

  it("stops without leaving a process, a port or its directory behind", async () => {
    const port = Number(new URL(cp.server).port);
    assert.equal(await portOpen(port), true);
    await cp.stop();
    assert.equal(await portOpen(port), false);
    assert.equal(existsSync(cp.dir), false);
  });
});
