/**
 * `winfleet diagnose NODE`: a node's diagnostics archive through the cluster (see
 * agent/operator/diagnose-node.ts). Options are parsed here; the work is the library's.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import type { Command } from "commander";
import { diagnoseNode, operatorApi } from "../operator";
import { AgentError, ValidationError, errorMessage, formatIssues } from "../common";
import { parseDuration } from "./diagnose-command";

interface Flags {
  readonly kubeconfig?: string;
  readonly out?: string;
  readonly since?: string;
  readonly namespace?: string;
  readonly timeout: string;
}

/** The kubeconfig kubectl would use: `$KUBECONFIG`'s first file, else `~/.kube/config`. */
function defaultKubeconfig(env: NodeJS.ProcessEnv = process.env): string {
  const first = env.KUBECONFIG?.split(delimiter).find(Boolean);
  return first ?? join(homedir(), ".kube", "config");
}

/** Registers `diagnose` on the operator's CLI. */
export function registerDiagnoseNodeCommand(program: Command): void {
  program
    .command("diagnose")
    .description(
      "fetch a node's diagnostics archive through the cluster: a short-lived HostProcess pod on the node runs winfleet-agent diagnose, read back through pods/log",
    )
    .argument("<node>", "the Node's name")
    .option(
      "--kubeconfig <file>",
      "kubeconfig whose current context is used (default: $KUBECONFIG, else ~/.kube/config)",
    )
    .option("--out <file>", "the archive to write (default: winfleet-diagnose-<node>-<time>.tar.gz here)")
    .option("--since <duration>", "how far back the node's logs go, e.g. 30m, 2h, 7d (the agent's default: 24h)")
    .option(
      "-n, --namespace <ns>",
      "the namespace winfleet's upgraders run in; the pod is made there (default: winfleet-<stack> by the node's winfleet.io/stack label, else winfleet-system)",
    )
    .option("--timeout <duration>", "the most the whole fetch may take (also the pod's activeDeadlineSeconds)", "5m")
    .action(async (node: string, flags: Flags) => {
      let timeoutMs: number;
      try {
        if (flags.since) parseDuration(flags.since);
        timeoutMs = parseDuration(flags.timeout, "--timeout");
      } catch (e) {
        process.stderr.write(`error: ${errorMessage(e)}\n`);
        process.exitCode = 2;
        return;
      }
      const kubeconfig = resolve(flags.kubeconfig ?? defaultKubeconfig());
      if (!existsSync(kubeconfig)) {
        process.stderr.write(
          `error: ${flags.kubeconfig ? "--kubeconfig " : "kubeconfig "}${kubeconfig}: no such file\n`,
        );
        process.exitCode = 2;
        return;
      }
      const stamp = new Date()
        .toISOString()
        .replace(/[-:]/g, "")
        .replace(/\.\d+Z$/, "Z");
      const out = resolve(flags.out ?? `winfleet-diagnose-${node}-${stamp}.tar.gz`);
      const interrupt = new AbortController();
      // The first signal stops the fetch and deletes the pod; a second one leaves at once.
      const onSignal = (): void => {
        if (!interrupt.signal.aborted) return interrupt.abort();
        process.stderr.write(
          `error: interrupted again: the diagnose pod may be left; delete it with kubectl -n ${flags.namespace ?? "<namespace>"} delete pods -l app.kubernetes.io/name=winfleet-diagnose\n`,
        );
        process.exit(130);
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);
      try {
        const api = await operatorApi(kubeconfig);
        const r = await diagnoseNode({
          api,
          node,
          namespace: flags.namespace,
          timeoutMs,
          out,
          signal: interrupt.signal,
          ...(flags.since ? { since: flags.since } : {}),
          progress: (line) => process.stderr.write(`${line}\n`),
        });
        process.stdout.write(
          `wrote ${r.out}: ${r.bytes} bytes from ${node}, sha256 ${r.sha256} checked; pod ${r.pod} deleted\n`,
        );
      } catch (e) {
        if (e instanceof ValidationError) process.stderr.write(`${e.subject} is invalid:\n${formatIssues(e.issues)}\n`);
        else process.stderr.write(`error: ${e instanceof AgentError ? e.message : errorMessage(e)}\n`);
        process.exitCode = interrupt.signal.aborted ? 130 : 1;
      } finally {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
      }
    });
}
