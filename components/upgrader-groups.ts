/**
 * What both upgrader components share: the groups to render (the chart's
 * `winsConfigs[]` as given, or one group per node pool) and the registration
 * of each group's ConfigMap and DaemonSet.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { FleetConfig } from "../infra/config";
import { kubeResource } from "./kube-objects";
import { type AgentTarget, type UpgraderGroup, type UpgraderKind, fixWinsConfig, renderUpgrader } from "./upgrader-render";

/** The stack's upgrader section. */
export type UpgraderConfig = NonNullable<FleetConfig["upgrader"]>;

/** Arguments both upgrader components take. */
export interface UpgraderArgs {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly upgrader: UpgraderConfig;
  /** Pools that get a group each when `winsConfigs` is empty. */
  readonly pools: readonly { readonly name: string }[];
  /** What the rollout carries (the pod template changes when and only when these do). */
  readonly versions: Readonly<Record<string, string>>;
}

/** The groups: the chart's `winsConfigs[]`, or one per pool selected by its pool label. */
export function upgraderGroups(u: UpgraderConfig, pools: readonly { readonly name: string }[]): UpgraderGroup[] {
  if (u.winsConfigs.length > 0) {
    return u.winsConfigs.map((w) => ({ name: w.name, image: `${w.image.repository}:${w.image.tag}`, nodeSelector: w.nodeSelector, tolerations: w.tolerations, config: fixWinsConfig(w.config) }));
  }
  return pools.map((p) => ({ name: p.name, image: u.image, nodeSelector: { "winfleet.io/pool": p.name }, tolerations: [], config: {} }));
}

/** Registers every group's ConfigMap and DaemonSet under `parent`. */
export function registerUpgraders(parent: pulumi.ComponentResource, prefix: string, kind: UpgraderKind, args: UpgraderArgs, target?: AgentTarget): string[] {
  const names: string[] = [];
  for (const group of upgraderGroups(args.upgrader, args.pools)) {
    const rendered = renderUpgrader({
      kind,
      namespace: args.namespace,
      serviceAccount: args.serviceAccount,
      group,
      mode: args.upgrader.mode,
      maxUnavailable: args.upgrader.maxUnavailable,
      versions: args.versions,
      pathPrefix: args.upgrader.pathPrefix,
      ...(args.upgrader.masquerade.enabled && args.upgrader.masquerade.as ? { masqueradeAs: args.upgrader.masquerade.as } : {}),
      ...(target ? { target } : {}),
    });
    const map = kubeResource(prefix, rendered.configMap, { parent });
    kubeResource(prefix, rendered.daemonSet, { parent, dependsOn: [map] });
    names.push(rendered.daemonSet.metadata.name);
  }
  return names;
}
