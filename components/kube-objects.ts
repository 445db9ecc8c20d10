/**
 * Rendered Kubernetes objects (plain data from the pure renders) as typed
 * @pulumi/kubernetes resources, one per object, named by kind and name so the
 * same render always registers the same resources.
 */
import * as k8s from "@pulumi/kubernetes";
import type * as pulumi from "@pulumi/pulumi";

/** A rendered object; values may be Pulumi inputs (secrets). */
export type KubeObject = Record<string, unknown> & {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: Record<string, unknown> & { readonly name: string; readonly namespace?: string };
};

type Ctor = new (name: string, args: never, opts?: pulumi.CustomResourceOptions) => pulumi.CustomResource;

const KINDS: Readonly<Record<string, Ctor>> = {
  "v1/Namespace": k8s.core.v1.Namespace,
  "v1/Node": k8s.core.v1.Node,
  "v1/ServiceAccount": k8s.core.v1.ServiceAccount,
  "v1/Secret": k8s.core.v1.Secret,
  "v1/ConfigMap": k8s.core.v1.ConfigMap,
  "rbac.authorization.k8s.io/v1/ClusterRole": k8s.rbac.v1.ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
  "rbac.authorization.k8s.io/v1/Role": k8s.rbac.v1.Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": k8s.rbac.v1.RoleBinding,
  "apps/v1/DaemonSet": k8s.apps.v1.DaemonSet,
  "apps/v1/Deployment": k8s.apps.v1.Deployment,
};

/** The resource name an object is registered under. */
export function kubeResourceName(prefix: string, o: KubeObject): string {
  return `${prefix}-${o.kind.toLowerCase()}-${o.metadata.namespace ? `${o.metadata.namespace}-` : ""}${o.metadata.name}`.replace(
    /[^a-zA-Z0-9-]/g,
    "-",
  );
}

/**
 * Git is the source of truth for what winfleet deploys: a field someone changed out of band
 * (`kubectl edit`, `kubectl patch`) now belongs to that field manager, and without force the
 * provider's server-side apply would fail on the conflict instead of restoring the field, so
 * drift remediation could never correct it.
 */
const FORCE = { "pulumi.com/patchForce": "true" } as const;

/** Registers `o` as its typed resource (under `resourceName`, when the object's own name changes over time). */
export function kubeResource(
  prefix: string,
  o: KubeObject,
  opts: pulumi.CustomResourceOptions,
  resourceName: string = kubeResourceName(prefix, o),
): pulumi.CustomResource {
  const ctor = KINDS[`${o.apiVersion}/${o.kind}`];
  if (!ctor) throw new Error(`no resource class for ${o.apiVersion} ${o.kind}`);
  const annotations = (o.metadata.annotations ?? {}) as Record<string, unknown>;
  const args: Record<string, unknown> = {
    ...o,
    metadata: { ...o.metadata, annotations: { ...annotations, ...FORCE } },
  };
  delete args.apiVersion;
  delete args.kind;
  return new ctor(resourceName, args as never, opts);
}
