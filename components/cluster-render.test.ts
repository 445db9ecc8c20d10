import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import {
  NODE_APPROVER,
  NODE_NAMES_CONFIGMAP,
  WINFLEET_TOKEN_GROUP,
  renderAgentAccess,
  renderBootstrapToken,
  renderKubeadmJoin,
  renderNodeApproval,
  renderTlsBootstrapAccess,
} from "./cluster-render";

/** Validates any rendered object against the Kubernetes 1.27 OpenAPI schema for its kind. */
function validateObject(o: Record<string, unknown>): void {
  const kinds: Record<string, new (x: never) => { validate(): void }> = {
    Namespace,
    Secret,
    ServiceAccount,
    ClusterRole,
    ClusterRoleBinding,
    Role,
    RoleBinding,
    ConfigMap,
    Deployment,
  };
  const K = kinds[String(o.kind)];
  if (!K) throw new Error(`no schema wired for ${String(o.kind)}`);
  new K(o as never).validate();
}

describe("cluster-side renders", () => {
  it("validate against the Kubernetes 1.27 OpenAPI schema", () => {
    for (const o of [
      ...renderAgentAccess("winfleet-system", "test"),
      ...renderKubeadmJoin("test", "abcdef", "0123456789abcdef", "winfleet", "2030-01-01T00:00:00Z"),
      ...renderNodeApproval(
        "winfleet-system",
        "test",
        [{ id: "abcdef", pool: "p", names: ["n1"] }],
        "registry/agent:1",
      ),
    ])
      validateObject(o);
  });

  it("label the namespace privileged for Pod Security Admission and grant the agent nothing beyond its node's credentials", () => {
    const objects = renderAgentAccess("winfleet-system", "test") as unknown as {
      kind: string;
      metadata: { name: string; labels?: Record<string, string> };
    }[];
    const ns = objects.find((o) => o.kind === "Namespace");
    for (const mode of ["enforce", "audit", "warn"])
      assert.equal(ns?.metadata.labels?.[`pod-security.kubernetes.io/${mode}`], "privileged");
    assert.deepEqual(
      objects.map((o) => `${o.kind}/${o.metadata.name}`),
      ["Namespace/winfleet-system", "ServiceAccount/winfleet-upgrader"],
    );
  });

  it("make a bootstrap token for one node that TLS bootstrap accepts, which always expires", () => {
    const secret = renderBootstrapToken(
      {
        id: "abcdef",
        secret: "0123456789abcdef",
        expiration: "2030-01-01T00:00:00Z",
        pool: "p",
        node: "n1",
        stack: "test",
      },
      "winfleet nodes",
    ) as unknown as {
      metadata: { name: string; namespace: string; labels: Record<string, string> };
      type: string;
      stringData: Record<string, string>;
    };
    assert.equal(secret.metadata.name, "bootstrap-token-abcdef");
    assert.equal(secret.metadata.namespace, "kube-system");
    assert.equal(secret.metadata.labels["winfleet.io/node"], "n1");
    assert.equal(secret.type, "bootstrap.kubernetes.io/token");
    assert.equal(secret.stringData["auth-extra-groups"], WINFLEET_TOKEN_GROUP);
    assert.equal(secret.stringData.expiration, "2030-01-01T00:00:00Z");
    assert.equal(secret.stringData["usage-bootstrap-authentication"], "true");
  });

  it("let the tokens create node CSRs, and approve no name for them: only renewals of a node's own", () => {
    const bindings = renderTlsBootstrapAccess("test") as unknown as {
      roleRef: { name: string };
      subjects: { name: string }[];
    }[];
    assert.deepEqual(
      bindings.map((b) => [b.roleRef.name, b.subjects.map((x) => x.name)]),
      [
        ["system:node-bootstrapper", [WINFLEET_TOKEN_GROUP]],
        ["system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", ["system:nodes"]],
      ],
    );
    assert.ok(!JSON.stringify(bindings).includes("certificatesigningrequests:nodeclient"));
  });

  it("name, per token, what it may join as; the approver may read only that, approve only kubelet client certificates", () => {
    const objects = renderNodeApproval("ns", "test", [
      { id: "abcdef", pool: "byo", names: ["host-1"] },
      { id: "ghijkl", pool: "ss", prefix: "ss" },
    ]) as unknown as { kind: string; metadata: { name: string }; data?: Record<string, string>; rules?: unknown[] }[];
    const map = objects.find((o) => o.kind === "ConfigMap");
    assert.equal(map?.metadata.name, NODE_NAMES_CONFIGMAP);
    assert.deepEqual(JSON.parse(map?.data?.abcdef ?? "{}"), { pool: "byo", names: ["host-1"] });
    assert.deepEqual(JSON.parse(map?.data?.ghijkl ?? "{}"), { pool: "ss", prefix: "ss" });
    assert.ok(!objects.some((o) => o.kind === "Deployment"), "no Deployment without an image");
    const role = objects.find((o) => o.kind === "ClusterRole");
    assert.ok(JSON.stringify(role?.rules).includes('"resourceNames":["kubernetes.io/kube-apiserver-client-kubelet"]'));
    assert.ok(!JSON.stringify(role?.rules).includes("secrets"));
    const withImage = renderNodeApproval("ns", "test", [], "registry/agent:1") as unknown as {
      kind: string;
      spec?: { template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } };
    }[];
    const deployment = withImage.find((o) => o.kind === "Deployment");
    assert.equal(deployment?.spec?.template.spec.serviceAccountName, NODE_APPROVER);
    assert.deepEqual(deployment?.spec?.template.spec.containers[0]?.args, [
      "approve-nodes",
      "--in-cluster",
      "--namespace",
      "ns",
    ]);
  });
});
