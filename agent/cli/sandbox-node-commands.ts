/**
 * `winfleet-agent sandbox-node`: a sandbox host's node (the BYO path's POSIX twin, where no
 * kubelet runs) from the agent config the bootstrap wrote. What it does is agent/cluster's; this
 * reads the agent config and hands the values over.
 */
import { hostname } from "node:os";
import { dirname, join } from "node:path";
import type { Command } from "commander";
import { startSandboxNode } from "../cluster";
import { AgentError, AgentErrorCode, createLogger } from "../common";
import { type AgentConfig, loadAgentConfig } from "../service";
import { failure } from "./errors";

/** The node's labels from the config's KUBE_NODE_LABELS (`k=v,…`), as a Windows node's kubelet gets them. */
export function nodeLabels(config: Pick<AgentConfig, "variables">): Record<string, string> {
  const labels: Record<string, string> = { "kubernetes.io/os": "windows" };
  for (const pair of (config.variables.KUBE_NODE_LABELS ?? "").split(",")) {
    const at = pair.indexOf("=");
    if (at > 0) labels[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return labels;
}

function required(config: AgentConfig, name: string, value: string | undefined): string {
  if (!value)
    throw new AgentError(AgentErrorCode.InvalidInput, `${config.file}: ${name} is missing (the bootstrap writes it)`);
  return value;
}

/** Registers `sandbox-node`. */
export function registerSandboxNodeCommands(program: Command): void {
  program
    .command("sandbox-node")
    .description(
      "a sandbox host's node (no kubelet there): join by TLS bootstrap with the agent config's join values, keep the Node, run its pods; in the foreground",
    )
    .requiredOption("--config <file>", "the agent config the bootstrap wrote")
    .option("--address <ip>", "the host's address: the Node's InternalIP", "127.0.0.1")
    .action(async (opts: { config: string; address: string }) => {
      const stop = new AbortController();
      process.once("SIGTERM", () => stop.abort());
      process.once("SIGINT", () => stop.abort());
      try {
        const config = await loadAgentConfig(opts.config);
        const log = createLogger("sandbox-node");
        const broker = config.broker;
        const socket = typeof broker === "object" && typeof broker.listen === "string" ? broker.listen : undefined;
        const node = await startSandboxNode({
          nodeName: config.nodeName ?? hostname(),
          agentConfig: config.file,
          kubeconfig: required(config, "kubeconfig", config.kubeconfig),
          apiServer: required(config, "variables.KUBE_API_SERVER", config.variables.KUBE_API_SERVER),
          caCertHash: required(config, "variables.KUBE_CA_CERT_HASH", config.variables.KUBE_CA_CERT_HASH),
          ...(config.secrets.KUBE_BOOTSTRAP_TOKEN ? { bootstrapToken: config.secrets.KUBE_BOOTSTRAP_TOKEN } : {}),
          labels: nodeLabels(config),
          address: opts.address,
          broker: required(config, "broker.listen", socket),
          agentEntry: process.argv[1] ?? "",
          podsDir: join(dirname(config.kubeconfig ?? config.file), "pods"),
          log: (line) => log.info(line),
        });
        await new Promise<void>((resolve) => stop.signal.addEventListener("abort", () => resolve(), { once: true }));
        await node.stop();
      } catch (e) {
        if (e instanceof AgentError) failure(e);
        else {
          process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
          process.exitCode = 1;
        }
      }
    });
}
