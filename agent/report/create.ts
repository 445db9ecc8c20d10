/**
 * The reporter `serve` runs, from the agent config: on when a kubeconfig is
 * known (the `report` section's, else the config's own) and `report.enabled`
 * is not false; its queue lives under `<root>/.winfleet/report-queue`.
 */
import { agentStateDir, type Logger } from "../common";
import { type AgentConfig, reportConfigSchema } from "../service";
import { nodeApiFromKubeconfig } from "./node-api";
import { Reporter } from "./reporter";

/** A reporter for this agent config, or undefined when it does not report. */
export function createReporter(config: AgentConfig, nodeName: string, root: string, log: Logger): Reporter | undefined {
  const r = config.report ?? reportConfigSchema.parse({});
  const kubeconfig = r.kubeconfig ?? config.kubeconfig;
  if (!r.enabled || kubeconfig === undefined) return undefined;
  return new Reporter({
    api: () => nodeApiFromKubeconfig(kubeconfig, r.requestTimeoutSeconds * 1000),
    nodeName,
    namespace: r.namespace,
    queueDir: agentStateDir(root).sub("report-queue"),
    queueLimit: r.queueLimit,
    eventsPerSecond: r.eventsPerSecond,
    burst: r.eventBurst,
    maxBackoffMs: r.maxBackoffSeconds * 1000,
    stopTimeoutMs: r.stopTimeoutSeconds * 1000,
    log,
  });
}
