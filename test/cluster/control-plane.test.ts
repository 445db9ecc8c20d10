/**
 * The throwaway control plane: the real etcd, kube-apiserver and kube-controller-manager
 * start on loopback with a PKI of their own, authorize as a production cluster does, and
 * leave no process or port behind when stopped.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient } from "../../agent/cluster/kube-client";
import { enginesOrSkip, portOpen, startTestControlPlane } from "../support";

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
