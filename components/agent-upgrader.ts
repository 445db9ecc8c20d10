/**
 * `AgentUpgrader`: rolls a new agent version or content (template, version,
 * content archive) through the Windows nodes, one DaemonSet per pool.
 * Each pod moves its host with `retarget` and `up`, then turns Ready only when
 * the host's agent reports the target applied, so `maxUnavailable` gates the
 * rollout on real convergence and a failing host halts it.
 */
import * as pulumi from "@pulumi/pulumi";
import type { DrainSettings } from "../agent/common";
import { type UpgraderArgs, agentGroups, registerUpgraders } from "./upgrader-groups";
import type { AgentTarget } from "./upgrader-render";

/** Arguments of {@link AgentUpgrader}. */
export interface AgentUpgraderArgs extends UpgraderArgs {
  /** Where the hosts go. */
  readonly target: AgentTarget;
  /** The deployed pools, a DaemonSet each, with the drain knobs their hosts get (absent: kubectl drain's defaults). */
  readonly pools: readonly {
    readonly name: string;
    readonly kind?: string;
    readonly platform?: string;
    readonly drain?: DrainSettings;
  }[];
  /** The stack's name: its nodes' label the DaemonSets select. */
  readonly stack: string;
}

/** The agent and content upgrader. */
export class AgentUpgrader extends pulumi.ComponentResource {
  /** The DaemonSets, one per group. */
  readonly daemonSets: string[];

  constructor(name: string, args: AgentUpgraderArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:AgentUpgrader", name, {}, opts);
    this.daemonSets = registerUpgraders(
      this,
      name,
      "agent",
      args,
      agentGroups(args.upgrader, args.pools, args.stack),
      args.target,
    );
    this.registerOutputs({ daemonSets: this.daemonSets });
  }
}
