/**
 * `winfleet-agent approve-nodes`: winfleet's node approver, in the foreground. It signs a node
 * client certificate only for a name the stack made the requesting token for (the names are in
 * the stack namespace's ConfigMap); what it judges is agent/cluster's, this connects and loops.
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { KubeClient, runNodeApprover } from "../cluster";
import { AgentError, AgentErrorCode, createLogger } from "../common";
import { failure } from "./errors";

const SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

/** The pod's own identity, read again at each pass: the kubelet rotates its projected token. */
function inCluster(): KubeClient {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? "443";
  if (!host)
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      "--in-cluster: KUBERNETES_SERVICE_HOST is not set (not in a pod?)",
    );
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return new KubeClient(server, {
    ca: readFileSync(`${SERVICE_ACCOUNT}/ca.crt`, "utf8"),
    token: readFileSync(`${SERVICE_ACCOUNT}/token`, "utf8").trim(),
  });
}

/** Registers `approve-nodes`. */
export function registerApproveNodesCommand(program: Command): void {
  program
    .command("approve-nodes")
    .description(
      "approve node client certificates for the names the stack's tokens were made for, deny the rest; in the foreground",
    )
    .requiredOption("--namespace <ns>", "the stack's namespace (its winfleet-node-names ConfigMap)")
    .option("--kubeconfig <file>", "a kubeconfig (embedded data) whose identity may approve node certificates")
    .option("--in-cluster", "use the pod's service account")
    .option("--interval-ms <ms>", "pause between passes", "2000")
    .action(async (opts: { namespace: string; kubeconfig?: string; inCluster?: boolean; intervalMs: string }) => {
      const stop = new AbortController();
      process.once("SIGTERM", () => stop.abort());
      process.once("SIGINT", () => stop.abort());
      const log = createLogger("approve-nodes");
      try {
        if ((opts.kubeconfig === undefined) === (opts.inCluster !== true))
          throw new AgentError(AgentErrorCode.InvalidInput, "give exactly one of --kubeconfig FILE and --in-cluster");
        const interval = Number(opts.intervalMs);
        if (!Number.isInteger(interval) || interval < 100)
          throw new AgentError(
            AgentErrorCode.InvalidInput,
            `--interval-ms ${opts.intervalMs}: a whole number, at least 100`,
          );
        const client = (): KubeClient =>
          opts.kubeconfig !== undefined ? KubeClient.fromKubeconfigFile(opts.kubeconfig) : inCluster();
        log.info(`approving nodes for the tokens named in ${opts.namespace}`);
        await runNodeApprover(client, opts.namespace, {
          signal: stop.signal,
          intervalMs: interval,
          onPass: (pass) => {
            for (const csr of pass.approved) log.info(`approved ${csr}`);
            for (const d of pass.denied) log.warn(`denied ${d.csr}: ${d.reason}`);
          },
          onError: (e) => log.warn(`pass failed (retrying): ${e instanceof Error ? e.message : String(e)}`),
        });
      } catch (e) {
        if (e instanceof AgentError) failure(e);
        else {
          process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
          process.exitCode = 1;
        }
      }
    });
}
