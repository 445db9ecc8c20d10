/**
 * `WinsUpgrader`: rolls the broker's wins-format config (process whitelist,
 * proxy ports) through the Windows nodes, accepting the rancher-wins-upgrader
 * chart's value shape (`winsConfigs[]`, path prefix, masquerade). Each pod
 * writes the group's config and asks the running broker to reload it, then
 * turns Ready only when the broker reports that config in use.
 */
import * as pulumi from "@pulumi/pulumi";
import { type UpgraderArgs, registerUpgraders, winsGroups } from "./upgrader-groups";

/** Arguments of {@link WinsUpgrader}. */
export type WinsUpgraderArgs = UpgraderArgs;

/** The broker-config upgrader. */
export class WinsUpgrader extends pulumi.ComponentResource {
  /** The DaemonSets, one per group. */
  readonly daemonSets: string[];

  constructor(name: string, args: WinsUpgraderArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:WinsUpgrader", name, {}, opts);
    this.daemonSets = registerUpgraders(this, name, "wins", args, winsGroups(args.upgrader));
    this.registerOutputs({ daemonSets: this.daemonSets });
  }
}
