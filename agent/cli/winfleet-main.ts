/**
 * `winfleet`: the operator's command line — content, rendering, the local fleet, a node's diagnostics.
 */
import { Command } from "commander";
import { AGENT_VERSION } from "../version";
import { registerContentCommands } from "./content-commands";
import { registerDiagnoseNodeCommand } from "./diagnose-node-command";
import { registerLocalCommands } from "./local-commands";
import { registerPreflightCommand } from "./preflight-command";
import { registerReleaseCommands } from "./release-commands";
import { registerRenderCommand } from "./render-command";

const program = new Command("winfleet")
  .description("winfleet: Windows worker node fleets for Kubernetes, declared and converged from Git")
  .version(AGENT_VERSION)
  .showHelpAfterError()
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

registerContentCommands(program);
registerDiagnoseNodeCommand(program);
registerLocalCommands(program);
registerPreflightCommand(program);
registerRenderCommand(program);
registerReleaseCommands(program);

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`winfleet: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
