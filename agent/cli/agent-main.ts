/**
 * `winfleet-agent`: the node agent's command line. Commands are registered by
 * area; each is a thin shell over the engine it drives. A module is loaded only
 * when its commands run (agent-commands.ts): start time and the idle service's
 * memory pay only for what they use.
 */
import { Command } from "commander";
import { AGENT_COMMANDS } from "./agent-commands";
import { registerLazily } from "./lazy-commands";
import { AGENT_VERSION } from "../version";

// Durable writes of many files flush concurrently (agent/ignition/apply.ts): libuv's
// default four threads would run four fsyncs at a time. Read when the pool first starts,
// which nothing above has made it do; idle, the pool is never started at all.
process.env.UV_THREADPOOL_SIZE ??= "16";

const program = new Command("winfleet-agent")
  .description("winfleet node agent: applies content, keeps the host converged, serves the wins protocol")
  .version(AGENT_VERSION)
  .showHelpAfterError()
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2));

registerLazily(program, AGENT_COMMANDS, process.argv);

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`winfleet-agent: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
