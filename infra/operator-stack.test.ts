import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import Ajv from "ajv";
import { ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { parseAllDocuments } from "yaml";
import { operatorStackYaml, renderOperatorStack } from "./operator-stack";

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
  const example = join(REPO, "deploy", "operator", "stack-dev.yaml");
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

  it("is what deploy/operator/stack-dev.yaml holds (regenerate it with winfleet operator-stack)", () => {
    assert.equal(readFileSync(example, "utf8"), operatorStackYaml(args));
    const docs = parseAllDocuments(readFileSync(example, "utf8")).map((d) => d.toJS() as Record<string, unknown>);
    assert.ok(validate(docs.find((d) => d.kind === "Stack")), JSON.stringify(validate.errors));
  });

  it("comes with the workspace's ServiceAccount, bound to system:auth-delegator (the operator's need) and cluster-admin (the program's)", () => {
    const docs = parseAllDocuments(operatorStackYaml({ ...args, namespace: "ops" })).map(
      (d) => d.toJS() as Record<string, unknown>,
    );
    assert.deepEqual(
      docs.map((d) => d.kind),
      ["ServiceAccount", "ClusterRoleBinding", "ClusterRoleBinding", "Stack"],
    );
    const [sa, delegator, admin, stack] = docs as [
      ServiceAccount,
      ClusterRoleBinding,
      ClusterRoleBinding,
      { spec: { serviceAccountName: string }; metadata: { namespace: string } },
    ];
    new ServiceAccount(sa).validate();
    for (const b of [delegator, admin]) new ClusterRoleBinding(b).validate();
    assert.deepEqual(
      [sa.metadata?.name, sa.metadata?.namespace],
      [stack.spec.serviceAccountName, stack.metadata.namespace],
      "the account the Stack names, where the Stack is",
    );
    assert.deepEqual([delegator.roleRef.name, admin.roleRef.name], ["system:auth-delegator", "cluster-admin"]);
    for (const b of [delegator, admin])
      assert.deepEqual(b.subjects, [{ kind: "ServiceAccount", name: "winfleet-deployer", namespace: "ops" }]);
    assert.notEqual(delegator.metadata?.name, admin.metadata?.name);
    assert.match(delegator.metadata?.name ?? "", /^ops:/, "another namespace's deployer gets bindings of its own");
  });
});
