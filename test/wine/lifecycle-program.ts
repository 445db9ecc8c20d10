/**
 * The lifecycle engine as `winfleet-agent apply` runs it (lifecycle-setup's
 * dependencies for a root, the same exit codes: 0 converged, 1 failed, 3010
 * reboot required), with two test stand-ins: components' commands run through
 * {@link CmdShell}, and a reboot is an exit 3010 for the test to start it
 * again, as a supervisor would (Windows' executor restarts the machine).
 * Usage: node lifecycle-program.js --content DIR --template NAME --root DIR
 */
import { parseArgs } from "node:util";
import { baseEnvironment } from "../../agent/common";
import { WITHHELD, apply, exitRebootExecutor } from "../../agent/lifecycle";
import { resolveWith } from "../../agent/service/lifecycle-setup";
import { CmdShell } from "./cmd-shell";

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { content: { type: "string" }, template: { type: "string" }, root: { type: "string" } },
  });
  const r = resolveWith(undefined, { content: values.content, template: values.template, root: values.root });
  const env = baseEnvironment(process.env, process.platform);
  for (const name of WITHHELD) delete env[name];
  const shell = new CmdShell(env, r.root);
  try {
    const outcome = await apply(
      { content: r.content ?? "", template: r.template },
      {
        ...r.deps({ event: () => undefined }, "lifecycle-program apply"),
        shell: () => shell,
        reboot: exitRebootExecutor,
      },
    );
    process.stdout.write(`${outcome.kind}\n`);
    if (outcome.kind === "failed") process.stderr.write(`${JSON.stringify(outcome.journal.run?.failure)}\n`);
    return outcome.kind === "converged" ? 0 : outcome.kind === "reboot" ? 3010 : 1;
  } finally {
    await shell.close();
  }
}

main().then(
  (code) => (process.exitCode = code),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`);
    process.exitCode = 1;
  },
);
