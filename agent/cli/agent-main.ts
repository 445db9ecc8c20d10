/**
 * `winfleet-agent`: the node agent's command line. Commands are registered by
 * area; each is a thin shell over the engine it drives.
 */
import { Command } from "commander";
import { registerAgentServiceCommands } from "./agent-service-commands";
import { registerBrokerCommands } from "./broker-commands";
import { registerIgnitionCommands } from "./ignition-commands";
import { registerInspectCommands } from "./inspect-commands";
import { registerLifecycleCommands } from "./lifecycle-commands";
import { registerServeCommand } from "./serve-command";
import { registerUpgradeCommands } from "./upgrade-commands";
import { AGENT_VERSION } from "../version";

const program = new Command("winfleet-agent")
  .description("winfleet node agent: applies content, keeps the host converged, serves the wins protocol")
  .version(AGENT_VERSION)
  .showHelpAfterError()
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

registerLifecycleCommands(program);
registerInspectCommands(program);
registerServeCommand(program);
registerIgnitionCommands(program);
registerBrokerCommands(program);
registerUpgradeCommands(program);
registerAgentServiceCommands(program, program.commands.find((c) => c.name() === "service") ?? program.command("service"));

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`winfleet-agent: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
