/**
 * What `winfleet preflight` runs once its options are parsed: read the stack and its neighbours,
 * render it under Pulumi's mock runtime (to know what its program creates), run the offline
 * checks, and those against the cluster and Azure that were asked for, then print the report.
 * Loaded only when that command runs (through agent/cli/render-run.ts), because rendering loads Pulumi.
 */
import { execFile } from "node:child_process";
import { readFile, readdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import { KubeClient } from "../agent/cluster";
import { ValidationError, errorMessage } from "../agent/common";
import { clusterObjects } from "./cluster-objects";
import { azureSubscription } from "./config";
import type { CreatedObject } from "./deployer-access";
import { kubeconfigPath, resolveContext } from "./kubeconfig";
import { type Check, exitCodeOf, formatReport, notRun, problem } from "./preflight";
import { AZURE_CHECKS, azureApi, azureChecks } from "./preflight-azure";
import { clusterChecks } from "./preflight-cluster";
import { stackChecks } from "./preflight-stack";
import { renderStack } from "./render";
import { type StackFile, readStackFile } from "./stack-file";

/** The parsed `winfleet preflight` options. */
export interface PreflightOptions {
  readonly stack: string;
  readonly cluster: boolean;
  readonly azure: boolean;
  readonly kubeconfig?: string | undefined;
}

/** What the run reads from outside: the clock, the environment, Azure's tokens. */
export interface PreflightIo {
  readonly now: Date;
  readonly env: NodeJS.ProcessEnv;
  readonly azureToken: (resource: "https://management.azure.com/" | "https://vault.azure.net") => Promise<string>;
  readonly write: (text: string) => void;
}

const CLUSTER_CHECKS = [
  { name: "cluster-reach", about: "the API server the kube context names" },
  { name: "cluster-permissions", about: "the deploying identity may create what the program creates" },
  { name: "cluster-objects", about: "none of those objects belongs to someone else" },
];

/** A token for `resource` from the Azure CLI's signed-in identity. */
export async function azCliToken(resource: string): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(
      "az",
      ["account", "get-access-token", "--resource", resource, "--query", "accessToken", "--output", "tsv"],
      { timeout: 60_000 },
    );
    return stdout.trim();
  } catch (e) {
    throw new Error(
      `the Azure CLI gave no token for ${resource} (is it installed, and signed in with az login?): ${errorMessage(e)}`,
    );
  }
}

// The other stacks of the stack's folder, those that parse.
async function neighbours(stack: StackFile): Promise<StackFile[]> {
  const out: StackFile[] = [];
  for (const f of (await readdir(dirname(stack.file))).sort()) {
    if (!/^Pulumi\..+\.ya?ml$/.test(f) || f === basename(stack.file)) continue;
    try {
      out.push(await readStackFile(join(dirname(stack.file), f)));
    } catch {
      // A broken neighbour is its own preflight's business.
    }
  }
  return out;
}

/** Runs the preflight and prints its report; returns the exit code (1: a problem). */
export async function runPreflight(o: PreflightOptions, io: PreflightIo): Promise<number> {
  let stack: StackFile;
  try {
    stack = await readStackFile(o.stack);
  } catch (e) {
    if (e instanceof ValidationError) {
      io.write(
        `preflight of stack ${o.stack}\n  problem  config: ${e.message}\n           fix: correct each value named above\n1 problem, 0 warnings\n`,
      );
      return 1;
    }
    throw e;
  }
  const kubeconfig = o.kubeconfig ?? kubeconfigPath(io.env);
  const checks: Check[] = stackChecks({
    stack,
    text: await readFile(stack.file, "utf8"),
    others: await neighbours(stack),
    now: io.now,
    kubeconfig,
  });
  let objects: CreatedObject[] = [];
  try {
    const rendered = await renderStack(stack.file);
    objects = clusterObjects(rendered.resources);
    checks.push({
      name: "program",
      needs: "stack",
      about: `the program declares ${rendered.resources.length} resources for the stack`,
      findings: [],
    });
  } catch (e) {
    checks.push({
      name: "program",
      needs: "stack",
      about: "the program accepts the stack",
      findings: [problem(errorMessage(e), "fix the stack config the message names")],
    });
  }
  const fleet = stack.fleet;
  if (fleet.cluster && o.cluster) {
    try {
      const context = resolveContext(kubeconfig, fleet.cluster.kubeContext);
      if (context.exec)
        throw new Error(
          `context ${context.name} authenticates through the ${context.exec} plugin, which preflight does not run: use a kubeconfig with a certificate or a token`,
        );
      const client = new KubeClient(context.server, {
        ca: context.ca ?? "",
        ...(context.cert ? { cert: context.cert } : {}),
        ...(context.key ? { key: context.key } : {}),
        ...(context.token ? { token: context.token } : {}),
      });
      checks.push(...(await clusterChecks(client, objects, stack.stack)));
    } catch (e) {
      checks.push({
        name: "cluster-reach",
        needs: "cluster",
        about: "the API server the kube context names",
        findings: [problem(errorMessage(e), `fix the kubeconfig at ${kubeconfig}`)],
      });
    }
  } else if (fleet.cluster) checks.push(...notRun("cluster", CLUSTER_CHECKS));
  if (azureSubscription(fleet) && o.azure) {
    try {
      checks.push(...(await azureChecks(azureApi(io.azureToken), fleet, stack.stack)));
    } catch (e) {
      checks.push({
        name: "azure-subscription",
        needs: "azure",
        about: "Azure as the signed-in identity",
        findings: [problem(errorMessage(e), "install the Azure CLI and az login as the identity that deploys")],
      });
    }
  } else if (azureSubscription(fleet)) checks.push(...notRun("azure", AZURE_CHECKS));
  io.write(formatReport(stack.stack, checks));
  return exitCodeOf(checks);
}
