/**
 * `winfleet render --stack NAME --out DIR`: what `pulumi up` would deploy,
 * rendered under Pulumi's mock runtime for review (in a pull request, say).
 * Pulumi is loaded only when this command runs.
 */
import type { Command } from "commander";
import type * as RenderRun from "./render-run";

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Registers `render` and `operator-stack`. */
export function registerRenderCommand(program: Command): void {
  program
    .command("render")
    .description("write what a stack would deploy, one file per resource, secrets as [secret]; nothing reaches a cloud")
    .requiredOption("--stack <name>", "stack name (stacks/Pulumi.<name>.yaml) or a stack file path")
    .requiredOption(
      "--out <dir>",
      "output directory (an earlier render there is replaced atomically; any other non-empty directory is refused)",
    )
    .option(
      "--secret <KEY=VALUE>",
      "a value for a secure config key (default: a placeholder); never written out",
      collect,
      [],
    )
    .action(async (opts: { stack: string; out: string; secret: string[] }) => {
      const secrets = Object.fromEntries(
        opts.secret.map((kv) => [kv.slice(0, Math.max(0, kv.indexOf("="))), kv.slice(kv.indexOf("=") + 1)]),
      );
      // Loaded here, not at the top: Pulumi takes a while to load, and only this command needs it
      // (the operator bundle keeps it in a file of its own; see render-run.ts).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { runRender } = require("./render-run") as typeof RenderRun;
      process.exitCode = await runRender({ stack: opts.stack, out: opts.out, secrets });
    });

  program
    .command("operator-stack")
    .description(
      "print a Pulumi Kubernetes Operator Stack (pulumi.com/v1) that deploys a winfleet stack from Git and re-runs it to correct drift, with the access its program needs in the cluster",
    )
    .requiredOption("--stack <org/project/stack>", "the fully qualified stack, e.g. my-org/winfleet/dev")
    .requiredOption("--repo <url>", "the Git repository holding this project")
    .option(
      "--stack-file <name|path>",
      "the stack file whose cluster side the workspace deploys (default: the stack's last part, stacks/Pulumi.<it>.yaml)",
    )
    .option("--branch <name>", "the branch to follow", "main")
    .option("--namespace <ns>", "where the operator runs it", "pulumi-operator")
    .option("--resync <seconds>", "how often to re-run the same commit (drift correction)", (v) => Number(v), 600)
    .action(
      async (opts: {
        stack: string;
        repo: string;
        stackFile?: string;
        branch: string;
        namespace: string;
        resync: number;
      }) => {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { runOperatorStack } = require("./render-run") as typeof RenderRun;
        process.exitCode = await runOperatorStack({
          stack: opts.stack,
          stackFile: opts.stackFile ?? opts.stack.split("/").pop() ?? opts.stack,
          projectRepo: opts.repo,
          branch: opts.branch,
          namespace: opts.namespace,
          resyncFrequencySeconds: opts.resync,
        });
      },
    );
}
