/**
 * What a rendered stack does in the cluster, as objects: the one reading of a render that the
 * operator Stack's access and the preflight's cluster checks share.
 */
import type { CreatedObject } from "./deployer-access";
import type { Registered } from "./render";

/**
 * The Kubernetes objects among `resources`: each one the program creates, patches (a `...Patch`
 * resource names the kind it patches) or reads (by the id it reads). Providers are left out.
 */
export function clusterObjects(resources: readonly Registered[]): CreatedObject[] {
  const out: CreatedObject[] = [];
  for (const r of resources) {
    const [pkg, apiVersion, kind] = r.type.split(":");
    if (pkg !== "kubernetes" || apiVersion === undefined || kind === undefined || apiVersion === "index") continue;
    const version = apiVersion.replace(/^core\//, "");
    if (r.read) {
      const [namespace, name] = (r.id ?? "").includes("/") ? (r.id ?? "").split("/") : [undefined, r.id];
      if (!name) continue;
      out.push({ apiVersion: version, kind, metadata: { name, ...(namespace ? { namespace } : {}) }, shared: "read" });
      continue;
    }
    const patch = kind.endsWith("Patch");
    out.push({
      ...(r.inputs as unknown as CreatedObject),
      apiVersion: version,
      kind: patch ? kind.slice(0, -"Patch".length) : kind,
      ...(patch ? { shared: "patch" as const } : {}),
    });
  }
  return out;
}
