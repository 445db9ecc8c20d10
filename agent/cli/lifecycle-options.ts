/**
 * What the lifecycle commands (`apply`, `plan`, `uninstall`, `status`,
 * `verify`) share on the command line: their options and exit codes. What the
 * options resolve to is agent/service's `resolveOptions`.
 */
import type { Command } from "commander";
import { REBOOT_EXIT } from "../lifecycle";

/** Exit codes of the lifecycle commands. */
export const EXIT = { converged: 0, failed: 1, usage: 2, reboot: REBOOT_EXIT } as const;

/** Collects a repeatable `--var NAME=VALUE`. */
export function collectVar(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Adds the options every lifecycle command shares. */
export function lifecycleOptions(cmd: Command): Command {
  return cmd
    .option("--root <dir>", "host path of / (default: the system drive's root on Windows, / elsewhere)")
    .option("--config <file>", "agent config to take content, template, root, node name, variables and secrets from")
    .option(
      "--public-key <file>",
      "refuse content not signed with this ed25519 public key (PEM); the config's publicKey otherwise",
    )
    .option("--json", "print JSON", false);
}
