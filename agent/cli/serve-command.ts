/**
 * `winfleet-agent serve --config FILE`: the service. Progress goes to stdout
 * as JSON lines (one per lifecycle event), logs to stderr; SIGTERM or SIGINT
 * stop it after the running command; it exits 3010 (194 where exit statuses
 * are 8 bits) when the content needs the host restarted.
 */
import { hostname } from "node:os";
import type { Command } from "commander";
import { createLogger, defaultRunDir, secretMasker } from "../common";
import { fanOut } from "../lifecycle";
import { createDrainer, createReporter } from "../report";
import { loadAgentConfig, resolveWith, serve } from "../service";
import { failure } from "./errors";
import { jsonProgress } from "./progress";

/** Registers `serve`. */
export function registerServeCommand(program: Command): void {
  program
    .command("serve")
    .description("run as the node's service: apply and keep applied the config's template, serve the broker")
    .requiredOption("--config <file>", "the agent config (JSON or YAML)")
    .action(async (opts: { config: string }) => {
      const stop = new AbortController();
      const onSignal = (): void => stop.abort();
      process.once("SIGTERM", onSignal);
      process.once("SIGINT", onSignal);
      try {
        // Reporting to Kubernetes is set up once, from the config as it is at start.
        const initial = await loadAgentConfig(opts.config);
        // An error message that carries a secret of the config, or key material, is masked in the log.
        const mask = secretMasker(Object.values(initial.secrets));
        const log = createLogger("agent", { mask });
        const progress = jsonProgress(process.stdout);
        const reporter = createReporter(
          initial,
          initial.nodeName ?? hostname(),
          resolveWith(initial).root,
          createLogger("report", { mask }),
        );
        reporter?.start();
        const exit = await serve({
          configFile: opts.config,
          engine: (config, observer, signal, supersede) => ({
            ...resolveWith(config).deps(observer, "winfleet-agent serve", signal),
            drainer: createDrainer(config, config.nodeName ?? hostname(), { supersede }),
          }),
          observer: reporter ? fanOut([progress, reporter]) : progress,
          log,
          runDir: defaultRunDir(),
          stopSignal: stop.signal,
        });
        log.info("agent stopping", { reason: exit.reason });
        await reporter?.stop();
        process.exitCode = exit.code;
      } catch (e) {
        failure(e);
      } finally {
        process.off("SIGTERM", onSignal);
        process.off("SIGINT", onSignal);
      }
    });
}
