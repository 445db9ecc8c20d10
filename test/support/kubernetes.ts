/**
 * Rendered Kubernetes objects checked against the Kubernetes OpenAPI schema
 * (kubernetes-models: types and required fields; unknown fields are not flagged).
 */

/** The kubernetes-models class for an object's apiVersion and kind; throws when there is none. */
function modelOf(object: { apiVersion?: unknown; kind?: unknown }): new (o: unknown) => { validate(): void } {
  const apiVersion = String(object.apiVersion);
  const kind = String(object.kind);
  // kubernetes-models lays its classes out as <group>/<version>/<Kind> ("v1/ConfigMap" for the core group).
  let module: Record<string, new (o: unknown) => { validate(): void }>;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    module = require(`kubernetes-models/${apiVersion}/${kind}`) as typeof module;
  } catch {
    throw new Error(`no model for ${apiVersion} ${kind}`);
  }
  const Model = module[kind];
  if (!Model) throw new Error(`no model for ${apiVersion} ${kind}`);
  return Model;
}

/** Validates a rendered object against the schema for its apiVersion and kind; throws naming what is wrong. */
export function validateKubernetesObject(object: Record<string, unknown>): void {
  new (modelOf(object))(object).validate();
}
