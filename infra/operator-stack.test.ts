import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import Ajv from "ajv";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { parseAllDocuments } from "yaml";
import {
  renderAgentAccess,
  renderCalicoAccess,
  renderKubeProxyAccess,
  renderKubeadmJoin,
  renderNodeApproval,
} from "../components/cluster-render";
import { ClusterRole } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { Namespace } from "kubernetes-models/v1/Namespace";
import type { CreatedObject } from "./deployer-access";
import { clusterObjects } from "./cluster-objects";
import { renderDeployerAccess } from "./deployer-access";
import { operatorStackYaml, renderOperatorStack } from "./operator-stack";

// What a kubeadm stack's program creates in the cluster: the cluster side, a content ConfigMap and an upgrader.
const objects: CreatedObject[] = [
  ...renderAgentAccess("winfleet-system", "dev"),
  ...renderKubeadmJoin("dev", "abcdef", "0123456789abcdef", "winfleet", "2030-01-01T00:00:00Z"),
  ...renderNodeApproval("winfleet-system", "dev", [{ id: "abcdef", pool: "win", names: ["win-1"] }]),
  ...renderKubeProxyAccess("winfleet-system", "dev"),
  ...renderCalicoAccess("winfleet-system", "dev"),
  { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "winfleet-content-0123", namespace: "winfleet-system" } },
  {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "winfleet-upgrader-win", namespace: "winfleet-system" },
  },
];

const REPO = join(__dirname, "..");
// The operator's own CRD schema for pulumi.com/v1 Stack, vendored (source and commit in its $comment).
const schema = JSON.parse(
  readFileSync(join(REPO, "test", "fixtures", "pko", "stack-v1.schema.json"), "utf8"),
) as Record<string, unknown>;
const ajv = new Ajv({ strict: false, allErrors: true });
// Kubernetes structural schemas forbid unknown fields unless preserved; say so to the validator.
function closed(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(closed);
  if (s === null || typeof s !== "object") return s;
  const o = Object.fromEntries(
    Object.entries(s as Record<string, unknown>).map(([k, v]) => [
      k,
      k === "properties"
        ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([pk, pv]) => [pk, closed(pv)]))
        : closed(v),
    ]),
  );
  if (
    o.type === "object" &&
    o.properties &&
    o.additionalProperties === undefined &&
    o["x-kubernetes-preserve-unknown-fields"] !== true
  )
    o.additionalProperties = false;
  return o;
}
const { $comment, ...rest } = schema;
void $comment;
const validate = ajv.compile(
  closed({
    ...rest,
    properties: { ...(rest.properties as Record<string, unknown>), metadata: { type: "object" } },
  }) as object,
);

describe("the Pulumi Kubernetes Operator Stack example", () => {
  const args = { stack: "my-org/winfleet/dev", projectRepo: "https://github.com/my-org/winfleet" };

  it("validates against the operator's CRD schema, unknown fields included", () => {
    const stack = renderOperatorStack(args);
    assert.ok(validate(stack), JSON.stringify(validate.errors));
    assert.match(
      (stack.metadata as { name: string }).name,
      /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
      "a DNS label, as Kubernetes names must be",
    );
    assert.equal(
      validate({ ...stack, spec: { ...(stack.spec as object), resyncFrequency: 60 } }),
      false,
      "a misspelt field is caught",
    );
    assert.equal(validate({ ...stack, spec: { projectRepo: args.projectRepo } }), false, "spec.stack is required");
  });

  it("reaches Azure with a federated credential, never a client secret", () => {
    const spec = renderOperatorStack(args).spec as {
      envRefs: Record<string, unknown>;
      workspaceTemplate: {
        spec: { env: { name: string; value: string }[]; podTemplate: { spec: Record<string, unknown> } };
      };
    };
    assert.deepEqual(Object.keys(spec.envRefs).sort(), [
      "ARM_CLIENT_ID",
      "ARM_SUBSCRIPTION_ID",
      "ARM_TENANT_ID",
      "PULUMI_ACCESS_TOKEN",
    ]);
    assert.deepEqual(spec.workspaceTemplate.spec.env, [
      { name: "ARM_USE_OIDC", value: "true" },
      { name: "ARM_OIDC_TOKEN_FILE_PATH", value: "/var/run/secrets/winfleet/azure/token" },
    ]);
    const pod = spec.workspaceTemplate.spec.podTemplate.spec as {
      containers: { name: string; volumeMounts: { name: string; mountPath: string }[] }[];
      volumes: { name: string; projected: { sources: { serviceAccountToken: Record<string, unknown> }[] } }[];
    };
    assert.deepEqual(pod.containers[0]?.volumeMounts[0], {
      name: "azure-token",
      mountPath: "/var/run/secrets/winfleet/azure",
      readOnly: true,
    });
    assert.deepEqual(pod.volumes[0]?.projected.sources[0]?.serviceAccountToken, {
      path: "token",
      audience: "api://AzureADTokenExchange",
      expirationSeconds: 3600,
    });
  });

  it("comes with the workspace's ServiceAccount, bound to system:auth-delegator (the operator's need) and to what the program creates, not cluster-admin", () => {
    const docs = parseAllDocuments(operatorStackYaml({ ...args, namespace: "ops" }, objects)).map(
      (d) => d.toJS() as Record<string, unknown>,
    );
    assert.deepEqual(
      docs.map(
        (d) =>
          `${String(d.kind)}${(d.metadata as { namespace?: string }).namespace ? ` ${(d.metadata as { namespace: string }).namespace}` : ""}`,
      ),
      [
        "ServiceAccount ops",
        "ClusterRoleBinding",
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role kube-system",
        "RoleBinding kube-system",
        "Role winfleet-system",
        "RoleBinding winfleet-system",
        "Stack ops",
      ],
    );
    const [sa, delegator] = docs as unknown as [ServiceAccount, ClusterRoleBinding];
    new ServiceAccount(sa).validate();
    new ClusterRoleBinding(delegator).validate();
    const stack = docs.at(-1) as { spec: { serviceAccountName: string }; metadata: { namespace: string } };
    assert.deepEqual(
      [sa.metadata?.name, sa.metadata?.namespace],
      [stack.spec.serviceAccountName, stack.metadata.namespace],
      "the account the Stack names, where the Stack is",
    );
    assert.equal(delegator.roleRef.name, "system:auth-delegator");
    assert.match(delegator.metadata?.name ?? "", /^ops:/, "another namespace's deployer gets bindings of its own");
    assert.ok(!JSON.stringify(docs).includes("cluster-admin"));
    for (const d of docs.filter((x) => String(x.kind).endsWith("Binding")))
      assert.deepEqual((d as { subjects: unknown }).subjects, [
        { kind: "ServiceAccount", name: "winfleet-deployer", namespace: "ops" },
      ]);
  });
});

describe("a deployer's access", () => {
  const NAMED_ONLY = ["get", "patch", "update", "delete", "escalate", "bind"];
  const access = renderDeployerAccess({ account: { name: "d", namespace: "ops" }, objects, prefix: "ops:d" });
  const role = (kind: string, namespace?: string) =>
    access.find((o) => o.kind === kind && (o.metadata as { namespace?: string }).namespace === namespace) as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }[];
    };
  const verbsOn = (r: ReturnType<typeof role>, resource: string, name?: string): string[] =>
    r.rules
      .filter(
        (x) =>
          x.resources.includes(resource) &&
          (x.resourceNames === undefined || (name !== undefined && x.resourceNames.includes(name))),
      )
      .flatMap((x) => x.verbs)
      .sort();

  it("validates against the Kubernetes schema", () => {
    const kinds: Record<string, new (x: never) => { validate(): void }> = {
      Namespace,
      ClusterRole,
      ClusterRoleBinding,
      Role,
      RoleBinding,
    };
    for (const o of access) new (kinds[String(o.kind)] as (typeof kinds)[string])(o as never).validate();
  });

  it("creates the cluster-scoped objects and manages them by name, binding only the roles the program binds", () => {
    const cluster = role("ClusterRole");
    assert.deepEqual(verbsOn(cluster, "clusterrolebindings", "winfleet:dev:kube-proxy"), [
      "create",
      "delete",
      "get",
      "list",
      "patch",
      "update",
      "watch",
    ]);
    assert.deepEqual(verbsOn(cluster, "clusterrolebindings", "cluster-admin-for-me"), ["create", "list", "watch"]);
    assert.deepEqual(verbsOn(cluster, "clusterroles", "system:node-bootstrapper"), ["bind", "create", "list", "watch"]);
    assert.deepEqual(
      verbsOn(cluster, "clusterroles", "cluster-admin"),
      ["create", "list", "watch"],
      "no bind: it cannot grant cluster-admin",
    );
    assert.deepEqual(verbsOn(cluster, "clusterroles", "winfleet:dev:calico-node"), [
      "bind",
      "create",
      "delete",
      "escalate",
      "get",
      "list",
      "patch",
      "update",
      "watch",
    ]);
    assert.deepEqual(verbsOn(cluster, "namespaces", "winfleet-system"), [
      "create",
      "delete",
      "get",
      "list",
      "patch",
      "update",
      "watch",
    ]);
    assert.deepEqual(verbsOn(cluster, "secrets"), [], "no Secret anywhere through the ClusterRole");
  });

  it("writes in kube-system only what the program made there", () => {
    const system = role("Role", "kube-system");
    assert.deepEqual(verbsOn(system, "secrets", "bootstrap-token-abcdef"), [
      "create",
      "delete",
      "get",
      "list",
      "patch",
      "update",
      "watch",
    ]);
    assert.deepEqual(
      verbsOn(system, "secrets", "some-other-secret"),
      ["create", "list", "watch"],
      "the provider sees a delete through by watching the kind",
    );
    assert.ok(
      !system.rules.some((r) => r.verbs.some((v) => NAMED_ONLY.includes(v)) && !r.resourceNames),
      "writes only what the program made",
    );
  });

  it("has every verb on the kinds the program puts into the namespace it creates, which it creates first", () => {
    assert.equal(access[0]?.kind, "Namespace");
    const own = role("Role", "winfleet-system");
    for (const resource of ["configmaps", "daemonsets", "secrets", "serviceaccounts"])
      assert.deepEqual(
        verbsOn(own, resource),
        ["create", "delete", "get", "list", "patch", "update", "watch"],
        resource,
      );
    assert.deepEqual(verbsOn(own, "pods"), []);
  });

  it("patches and reads someone else's objects by name only: never creates, lists or deletes them", () => {
    const shared = clusterObjects([
      {
        type: "kubernetes:operator.tigera.io/v1:Installation",
        name: "calico-installation-default",
        inputs: {},
        read: true,
        id: "default",
      },
      {
        type: "kubernetes:operator.tigera.io/v1:InstallationPatch",
        name: "calico-windows",
        inputs: { metadata: { name: "default" } },
      },
      {
        type: "kubernetes:core/v1:ConfigMapPatch",
        name: "calico-endpoint",
        inputs: { metadata: { name: "kubernetes-services-endpoint", namespace: "tigera-operator" } },
      },
      { type: "kubernetes:core/v1:Namespace", name: "ns", inputs: { metadata: { name: "winfleet-dev" } } },
      { type: "kubernetes:index:Provider", name: "k8s", inputs: {} },
    ]);
    assert.deepEqual(
      shared.map((o) => `${o.kind} ${o.metadata.name} ${o.shared ?? "created"}`),
      [
        "Installation default read",
        "Installation default patch",
        "ConfigMap kubernetes-services-endpoint patch",
        "Namespace winfleet-dev created",
      ],
    );
    const rendered = renderDeployerAccess({
      account: { name: "d", namespace: "ops" },
      objects: shared,
      prefix: "ops:d",
    });
    const rulesOf = (kind: string, namespace?: string) =>
      (
        rendered.find((o) => o.kind === kind && (o.metadata as { namespace?: string }).namespace === namespace) as {
          rules: { resources: string[]; verbs: string[]; resourceNames?: string[] }[];
        }
      ).rules;
    assert.deepEqual(
      rulesOf("ClusterRole").filter((r) => r.resources.includes("installations")),
      [
        {
          apiGroups: ["operator.tigera.io"],
          resources: ["installations"],
          verbs: ["get", "patch"],
          resourceNames: ["default"],
        },
      ],
    );
    assert.deepEqual(rulesOf("Role", "tigera-operator"), [
      {
        apiGroups: [""],
        resources: ["configmaps"],
        verbs: ["get", "patch"],
        resourceNames: ["kubernetes-services-endpoint"],
      },
    ]);
    assert.ok(
      !rendered.some((o) => o.kind === "Namespace" && (o.metadata as { name: string }).name === "tigera-operator"),
    );
  });
});
