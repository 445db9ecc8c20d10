/**
 * `winfleet-agent ready` (the upgrader pods' readiness probe) and
 * `winfleet-agent service reload-config` (the wins-mode upgrader): both ask the
 * running agent over its broker socket or pipe.
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import { DEFAULT_LISTEN, endpointPath, type StatusResponse } from "../broker";
import { agentStatus, reloadBrokerConfig } from "../broker/client";
import { AgentError, AgentErrorCode, defaultRunDir, errorMessage } from "../common";
import type * as Service from "../service";
import { failure, printError } from "./errors";

/** What `ready` wants. */
export interface ReadyWants {
  readonly template?: string;
  readonly templateVersion?: string;
  readonly agentVersion?: string;
  readonly brokerConfigSha256?: string;
}

/** Why the agent is not ready for `wants`, or undefined when it is. */
export function notReady(s: StatusResponse, wants: ReadyWants): string | undefined {
  if (s.State !== "converged")
    return `the agent is ${s.State || "in an unknown state"}${s.Failure ? `: ${s.Failure}` : ""}`;
  if (wants.template !== undefined && s.Template !== wants.template)
    return `it runs template ${s.Template}, not ${wants.template}`;
  if (wants.templateVersion !== undefined && s.TemplateVersion !== wants.templateVersion)
    return `it runs ${s.Template} ${s.TemplateVersion}, not ${wants.templateVersion}`;
  if (wants.agentVersion !== undefined && s.AgentVersion !== wants.agentVersion)
    return `the agent is version ${s.AgentVersion}, not ${wants.agentVersion}`;
  if (wants.brokerConfigSha256 !== undefined && s.BrokerConfigSha256 !== wants.brokerConfigSha256)
    return `the broker runs config ${s.BrokerConfigSha256.slice(0, 12) || "(none)"}, not ${wants.brokerConfigSha256.slice(0, 12)}`;
  return undefined;
}

const socketOf = (server: string): string => endpointPath(server, process.platform, defaultRunDir());

/** Registers `ready` and `service reload-config`. */
export function registerAgentServiceCommands(program: Command, service: Command): void {
  program
    .command("ready")
    .description(
      "exit 0 when the agent on this host is converged at the given versions, 1 (saying why) when not: the upgrader's readiness probe",
    )
    .option("--server <name>", "broker socket: a name (pipe on Windows) or an absolute socket path", DEFAULT_LISTEN)
    .option("--template <name>", "the template it must run")
    .option("--template-version <version>", "the template version it must run")
    .option("--agent-version <version>", "the agent version it must be")
    .option("--broker-config-sha256 <hex>", "the broker config it must run")
    .action(async (opts: { server: string } & ReadyWants) => {
      try {
        const why = notReady(await agentStatus(socketOf(opts.server)), opts);
        process.stdout.write(why ? `not ready: ${why}\n` : "ready\n");
        process.exitCode = why ? 1 : 0;
      } catch (e) {
        process.stdout.write(`not ready: the agent does not answer on ${socketOf(opts.server)}: ${errorMessage(e)}\n`);
        process.exitCode = 1;
      }
    });

  program
    .command("retarget")
    .description(
      "move this host to a new template and content archive (SHA-256 checked): rewrites the agent config, which the running agent then applies",
    )
    .requiredOption("--config <file>", "the agent config to rewrite")
    .requiredOption("--template <name>", "the template to run")
    .requiredOption("--template-version <version>", "its version")
    .requiredOption("--content-sha256 <hex>", "SHA-256 of the content archive")
    .option("--content-archive <file>", "the content archive (.tar.gz), e.g. from a mounted ConfigMap")
    .option("--content-url <url>", "where to download the content archive")
    .option("--content-auth <kind>", "none, or managedIdentity (Azure blob read with the node's identity)", "none")
    .option("--content-sas-env <name>", "an environment variable holding a read SAS for --content-url")
    .action(
      async (opts: {
        config: string;
        template: string;
        templateVersion: string;
        contentSha256: string;
        contentArchive?: string;
        contentUrl?: string;
        contentAuth: string;
        contentSasEnv?: string;
      }) => {
        if (
          (opts.contentArchive === undefined) === (opts.contentUrl === undefined) ||
          !["none", "managedIdentity"].includes(opts.contentAuth)
        ) {
          printError(
            "give exactly one of --content-archive and --content-url, and --content-auth none or managedIdentity",
            2,
          );
          return;
        }
        try {
          const sas = opts.contentSasEnv !== undefined ? process.env[opts.contentSasEnv] : undefined;
          if (opts.contentSasEnv !== undefined && !sas)
            throw new AgentError(
              AgentErrorCode.InvalidInput,
              `--content-sas-env ${opts.contentSasEnv}: that variable is not set`,
            );
          const archive =
            opts.contentArchive !== undefined
              ? { kind: "file" as const, path: resolve(opts.contentArchive) }
              : {
                  kind: "url" as const,
                  url: opts.contentUrl ?? "",
                  auth: opts.contentAuth as "none" | "managedIdentity",
                  ...(sas ? { sas } : {}),
                };
          // Loaded here, not above: `ready` runs every few seconds as a readiness probe and needs none of it.
          // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on demand
          const { retarget } = require("../service") as typeof Service;
          const r = await retarget({
            config: resolve(opts.config),
            template: opts.template,
            templateVersion: opts.templateVersion,
            archive,
            sha256: opts.contentSha256,
          });
          process.stdout.write(
            r.changed
              ? `retargeted to ${opts.template} ${opts.templateVersion} (content ${r.content})\n`
              : `already at ${opts.template} ${opts.templateVersion}\n`,
          );
        } catch (e) {
          failure(e);
        }
      },
    );

  service
    .command("reload-config")
    .description("make the running broker re-read its config (whitelist, proxy ports) without a restart")
    .option("--config <file>", "the config to read (default: the file the broker started with)")
    .option("--server <name>", "broker socket: a name (pipe on Windows) or an absolute socket path", DEFAULT_LISTEN)
    .action(async (opts: { config?: string; server: string }) => {
      try {
        const r = await reloadBrokerConfig(socketOf(opts.server), opts.config ? resolve(opts.config) : undefined);
        process.stdout.write(
          `reloaded: ${r.ProcessPaths} process paths, ${r.ProxyPorts} proxy ports (config ${r.ConfigSha256.slice(0, 12)})\n`,
        );
      } catch (e) {
        printError(errorMessage(e));
      }
    });
}
