/**
 * What both upgrader components share: their node groups (the agent upgrader
 * one per pool; the wins upgrader the chart's `winsConfigs[]`) and the
 * registration of each group's ConfigMap and DaemonSet.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { DrainSettings } from "../agent/common";
import { kubeResource } from "./kube-objects";
import { POOL_LABEL } from "./pool-render";
import { STACK_LABEL, stackSlug } from "./stack-names";
import {
  type AgentTarget,
  type UpgraderGroup,
  type UpgraderKind,
  fixWinsConfig,
  renderUpgrader,
} from "./upgrader-render";

/**
 * One of the rancher-wins-upgrader chart's `winsConfigs[]`: a node group and the broker (wins) config its hosts run.
 */
export interface WinsConfigArgs {
  readonly name: string;
  /** An image that carries the winfleet agent. */
  readonly image: { readonly repository: string; readonly tag: string };
  /** The wins config; `whiteList` is rewritten to `white_list`. */
  readonly config: Readonly<Record<string, unknown>>;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Readonly<Record<string, unknown>>[];
}

/** How the upgraders roll: the same shape as the rancher-wins-upgrader chart's values. */
export interface UpgraderConfig {
  /** HostProcess containers (Kubernetes 1.26 and later), or the wins pipe. */
  readonly mode: "hostProcess" | "wins";
  /** How many nodes (or what percentage, `"25%"`) a rollout may take at once. */
  readonly maxUnavailable: number | string;
  /** The image carrying the agent, for the agent upgrader's pods. */
  readonly image: string;
  /** The wins upgrader's node groups; none, and no wins upgrader is deployed. */
  readonly winsConfigs: readonly WinsConfigArgs[];
  /** The chart's `global.cattle.rkeWindowsPathPrefix`, ending in `/` or `\`. */
  readonly pathPrefix: string;
  readonly masquerade: { readonly enabled: boolean; readonly as?: string | undefined };
}

/** Arguments both upgrader components take. */
export interface UpgraderArgs {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly upgrader: UpgraderConfig;
  /** What the rollout carries (the pod template changes when and only when these do). */
  readonly versions: Readonly<Record<string, string>>;
}

/**
 * The agent upgrader's groups: one per deployed pool, selected by its pool and stack labels (another stack's pool of
 * the same name in the same cluster is not this one's), running the upgrader image. Local pools and POSIX BYO pools
 * are sandbox hosts.
 */
export function agentGroups(
  u: UpgraderConfig,
  pools: readonly {
    readonly name: string;
    readonly kind?: string;
    readonly platform?: string;
    readonly drain?: DrainSettings | undefined;
  }[],
  stack: string,
): UpgraderGroup[] {
  return pools.map((p) => ({
    name: p.name,
    image: u.image,
    nodeSelector: { [POOL_LABEL]: p.name, [STACK_LABEL]: stackSlug(stack) },
    tolerations: [],
    config: {},
    ...(p.kind === "local" || p.platform === "posix" ? { sandbox: true } : {}),
    ...(p.drain ? { drain: p.drain } : {}),
  }));
}

/** The wins upgrader's groups: the chart's `winsConfigs[]`, each with the broker config its hosts run. */
export function winsGroups(u: UpgraderConfig): UpgraderGroup[] {
  return u.winsConfigs.map((w) => ({
    name: w.name,
    image: `${w.image.repository}:${w.image.tag}`,
    nodeSelector: w.nodeSelector,
    tolerations: w.tolerations,
    config: fixWinsConfig(w.config),
  }));
}

/** Registers every group's ConfigMap and DaemonSet under `parent`. */
export function registerUpgraders(
  parent: pulumi.ComponentResource,
  prefix: string,
  kind: UpgraderKind,
  args: UpgraderArgs,
  groups: readonly UpgraderGroup[],
  target?: AgentTarget,
): string[] {
  const names: string[] = [];
  for (const group of groups) {
    const rendered = renderUpgrader({
      kind,
      namespace: args.namespace,
      serviceAccount: args.serviceAccount,
      group,
      mode: args.upgrader.mode,
      maxUnavailable: args.upgrader.maxUnavailable,
      versions: args.versions,
      pathPrefix: args.upgrader.pathPrefix,
      ...(args.upgrader.masquerade.enabled && args.upgrader.masquerade.as
        ? { masqueradeAs: args.upgrader.masquerade.as }
        : {}),
      ...(target ? { target } : {}),
    });
    const map = kubeResource(prefix, rendered.configMap, { parent });
    kubeResource(prefix, rendered.daemonSet, { parent, dependsOn: [map] });
    names.push(rendered.daemonSet.metadata.name);
  }
  return names;
}
