import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { KUBEADM_TOKEN_GROUP, renderAgentAccess, renderKubeadmJoin, renderRke2Join } from "./cluster-render";

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
  };
  const K = kinds[String(o.kind)];
  if (!K) throw new Error(`no schema wired for ${String(o.kind)}`);
  new K(o as never).validate();
}

describe("cluster-side renders", () => {
  it("validate against the Kubernetes 1.27 OpenAPI schema", () => {
    for (const o of [
      ...renderAgentAccess("winfleet-system", "test"),
      ...renderKubeadmJoin("test", "abcdef", "0123456789abcdef", "winfleet"),
      ...renderRke2Join("winfleet-system", "test", "https://rke2:9345", "t"),
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

  it("make a kubeadm bootstrap token that TLS bootstrap accepts", () => {
    const [secret] = renderKubeadmJoin("test", "abcdef", "0123456789abcdef", "winfleet nodes") as unknown as [
      { metadata: { name: string; namespace: string }; type: string; stringData: Record<string, string> },
    ];
    assert.equal(secret.metadata.name, "bootstrap-token-abcdef");
    assert.equal(secret.metadata.namespace, "kube-system");
    assert.equal(secret.type, "bootstrap.kubernetes.io/token");
    assert.equal(secret.stringData["auth-extra-groups"], KUBEADM_TOKEN_GROUP);
    assert.equal(secret.stringData["usage-bootstrap-authentication"], "true");
  });
});
