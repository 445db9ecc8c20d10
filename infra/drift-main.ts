/**
 * `npm run drift -- --stack NAME [--remediate]`: the scheduled drift check (see
 * drift.ts). Exit codes: 0 no drift (or drift corrected with --remediate),
 * 1 drift found, 2 usage, 3 a Pulumi operation failed, 4 no Pulumi CLI here.
 */
import { projectRoot, errorMessage } from "../agent/common";
import { Command } from "commander";
import { DRIFT_EXIT, automationOps, checkDrift, pulumiCliAvailable } from "./drift";

const program = new Command("drift")
  .description(
    "check a stack for drift: refresh preview (cloud vs state), then preview (Git vs state); --remediate runs pulumi up",
  )
  .requiredOption("--stack <name>", "the stack (stacks/Pulumi.<name>.yaml)")
  .option("--remediate", "run pulumi up when drift is found", false)
  .option("--summary <file>", "also write the summary to this file (for an issue body)")
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : DRIFT_EXIT.usage))
  .action(async (opts: { stack: string; remediate: boolean; summary?: string }) => {
    if (!pulumiCliAvailable()) {
      process.stderr.write(
        "drift: the Pulumi CLI is not installed here (https://www.pulumi.com/docs/iac/download-install/); drift detection runs it through the Automation API\n",
      );
      process.exitCode = DRIFT_EXIT.noCli;
      return;
    }
    try {
      const ops = await automationOps(opts.stack, projectRoot());
      const report = await checkDrift(opts.stack, ops, {
        remediate: opts.remediate,
        log: (l) => process.stderr.write(`${l}\n`),
      });
      process.stdout.write(`${report.summary}\n`);
      if (opts.summary) {
        const { writeFileSync } = await import("node:fs");
        writeFileSync(opts.summary, `${report.summary}\n`);
      }
      process.exitCode = report.exitCode;
    } catch (e) {
      process.stderr.write(`drift: ${errorMessage(e)}\n`);
      process.exitCode = DRIFT_EXIT.failed;
    }
  });

void program.parseAsync(process.argv);
