/**
 * `winfleet preflight --stack NAME [--cluster] [--azure]`: what would make the stack's `pulumi up`
 * or destroy fail late, found before it runs, each problem with its fix (infra/preflight.ts).
 * Options are parsed here; the work is infra/preflight-run.ts's, which render-run.ts (the part of the
 * command line that carries Pulumi) loads only when this command runs.
 */
import type { Command } from "commander";
import type * as RenderRun from "./render-run";

/** Registers `preflight` on the operator's CLI. */
export function registerPreflightCommand(program: Command): void {
  program
    .command("preflight")
    .description(
      "check a stack before pulumi up: secrets, placeholders, token expiry, names no other stack shares, the kube context (offline); with --cluster and --azure, what the deploying identity may do there and what stands in its way",
    )
    .requiredOption("--stack <name>", "stack name (stacks/Pulumi.<name>.yaml) or a stack file path")
    .option("--cluster", "also check the cluster the stack's kube context reaches", false)
    .option("--azure", "also check Azure, as the identity az login signed in", false)
    .option("--kubeconfig <file>", "the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
    .action(async (opts: { stack: string; cluster: boolean; azure: boolean; kubeconfig?: string }) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { azCliToken, runPreflight } = require("./render-run") as typeof RenderRun;
      process.exitCode = await runPreflight(opts, {
        now: new Date(),
        env: process.env,
        azureToken: azCliToken,
        write: (text) => process.stdout.write(text),
      });
    });
}
