import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import Ajv from "ajv";
import { parse as parseYaml } from "yaml";
import { operatorStackYaml, renderOperatorStack } from "./operator-stack";

const REPO = join(__dirname, "..");
// The operator's own CRD schema for pulumi.com/v1 Stack, vendored (source and commit in its $comment).
const schema = JSON.parse(readFileSync(join(REPO, "test", "fixtures", "pko", "stack-v1.schema.json"), "utf8")) as Record<string, unknown>;
const ajv = new Ajv({ strict: false, allErrors: true });
// Kubernetes structural schemas forbid unknown fields unless preserved; say so to the validator.
function closed(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(closed);
  if (s === null || typeof s !== "object") return s;
  const o = Object.fromEntries(Object.entries(s as Record<string, unknown>).map(([k, v]) => [k, k === "properties" ? Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([pk, pv]) => [pk, closed(pv)])) : closed(v)]));
  if (o.type === "object" && o.properties && o.additionalProperties === undefined && o["x-kubernetes-preserve-unknown-fields"] !== true) o.additionalProperties = false;
  return o;
}
const { $comment, ...rest } = schema;
void $comment;
const validate = ajv.compile(closed({ ...rest, properties: { ...(rest.properties as Record<string, unknown>), metadata: { type: "object" } } }) as object);

describe("the Pulumi Kubernetes Operator Stack example", () => {
  const example = join(REPO, "deploy", "operator", "stack-dev.yaml");
  const args = { stack: "my-org/winfleet/dev", projectRepo: "https://github.com/my-org/winfleet" };

  it("validates against the operator's CRD schema, unknown fields included", () => {
    const stack = renderOperatorStack(args);
    assert.ok(validate(stack), JSON.stringify(validate.errors));
    assert.match((stack.metadata as { name: string }).name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a DNS label, as Kubernetes names must be");
    assert.equal(validate({ ...stack, spec: { ...(stack.spec as object), resyncFrequency: 60 } }), false, "a misspelt field is caught");
    assert.equal(validate({ ...stack, spec: { projectRepo: args.projectRepo } }), false, "spec.stack is required");
  });

  it("is what deploy/operator/stack-dev.yaml holds (regenerate it with winfleet operator-stack)", () => {
    assert.equal(readFileSync(example, "utf8"), operatorStackYaml(args));
    assert.ok(validate(parseYaml(readFileSync(example, "utf8"))), JSON.stringify(validate.errors));
  });
});
