/**
 * `winfleet-agent ignition validate|apply|translate`: a thin shell over the engine.
 * Exit codes: 0 success, 1 invalid or failed (with the reasons on stderr), 2 usage.
 */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Command } from "commander";
import { AgentError, formatIssues } from "../common";
import { ledgerPath } from "../lifecycle";
import { failure } from "./errors";
import { applyIgnition, parseIgnition, renderV3, rootedMapper, type ParsedIgnition } from "../ignition";

async function load(file: string, lenient: boolean): Promise<ParsedIgnition> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    throw new AgentError("INVALID_INPUT", `cannot read ${file}: ${(e as Error).message}`);
  }
  const parsed = parseIgnition(text, { lenient, subject: file });
  if (parsed.warnings.length > 0) process.stderr.write(`${formatIssues(parsed.warnings)}\n`);
  for (const n of parsed.config.notApplicable) process.stderr.write(`not applicable at ${n.path}: ${n.reason}\n`);
  return parsed;
}

/** Registers the `ignition` command group. */
export function registerIgnitionCommands(program: Command): void {
  const ign = program
    .command("ignition")
    .description("validate and apply Ignition configs (spec 2.2.0 and 3.0.0-3.4.0)");

  ign
    .command("validate")
    .description("check a config; exit 0 when valid, 1 with every error on stderr when not")
    .argument("<file>", "Ignition config (JSON)")
    .option("--lenient", "accept and report known defects of legacy 2.2 content", false)
    .action(async (file: string, opts: { lenient: boolean }) => {
      try {
        await load(file, opts.lenient);
      } catch (e) {
        failure(e);
      }
    });

  ign
    .command("apply")
    .description("apply a config below a root directory; nothing is written unless all of it can be")
    .argument("<file>", "Ignition config (JSON)")
    .requiredOption("--root <dir>", "directory that stands for the host's root (the system drive on Windows)")
    .option("--bundle <dir>", "content bundle that bundle:/// sources resolve against")
    .option(
      "--ledger <file>",
      "ledger of written files that makes re-applies idempotent (default: <root>/.winfleet/ignition-ledger.json)",
    )
    .option("--allow-unverified-http", "fetch http(s) sources that have no verification.hash", false)
    .option("--lenient", "accept and report known defects of legacy 2.2 content", false)
    .option("--dry-run", "plan only and print what would change", false)
    .action(
      async (
        file: string,
        opts: {
          root: string;
          bundle?: string;
          ledger?: string;
          allowUnverifiedHttp: boolean;
          lenient: boolean;
          dryRun: boolean;
        },
      ) => {
        try {
          const { config } = await load(file, opts.lenient);
          const root = resolve(opts.root);
          const report = await applyIgnition(config, {
            mapper: rootedMapper(root),
            ledgerPath: opts.ledger ?? ledgerPath(root),
            bundleRoot: opts.bundle,
            allowUnverifiedHttp: opts.allowUnverifiedHttp,
            dryRun: opts.dryRun,
          });
          const verb = opts.dryRun ? "would change" : "changed";
          process.stdout.write(`${verb} ${report.changed.length}, unchanged ${report.unchanged.length}\n`);
          for (const p of report.changed) process.stdout.write(`  ${verb}: ${p}\n`);
        } catch (e) {
          failure(e);
        }
      },
    );

  ign
    .command("translate")
    .description("print a config as spec 3.x (translates 2.2.0 with its defaults made explicit)")
    .argument("<file>", "Ignition config (JSON)")
    .option("--to <version>", "3.x version to emit", "3.3.0")
    .option("--lenient", "accept and report known defects of legacy 2.2 content", false)
    .action(async (file: string, opts: { to: string; lenient: boolean }) => {
      try {
        const { config } = await load(file, opts.lenient);
        process.stdout.write(`${JSON.stringify(renderV3(config, opts.to), null, 2)}\n`);
      } catch (e) {
        failure(e);
      }
    });
}
