/**
 * The preflight checks that need nothing but the stack files and the local
 * kubeconfig: secrets set, placeholders replaced, tokens that have not expired,
 * names no other stack here shares, and the cluster the stack's kube context
 * reaches. See preflight.ts.
 */
import { existsSync } from "node:fs";
import { defaultNamespace } from "../components";
import { type FleetConfig, secretKeys } from "./config";
import { type Check, type Finding, problem, warning } from "./preflight";
import { readKubeconfig, resolveContext } from "./kubeconfig";
import type { StackFile } from "./stack-file";

/** What the offline checks read. */
export interface StackChecksArgs {
  readonly stack: StackFile;
  /** The stack file's text (for its REPLACE markers). */
  readonly text: string;
  /** The other stacks of the same folder: names they share with this one collide. */
  readonly others: readonly StackFile[];
  readonly now: Date;
  /** The kubeconfig file Pulumi's Kubernetes provider would read. */
  readonly kubeconfig: string;
}

/** How close to an expiry a warning starts. */
export const EXPIRY_MARGIN_DAYS = 7;
const DAY = 24 * 60 * 60 * 1000;
const ZERO_DIGEST = /^0{64}$/;
const ZERO_SUBSCRIPTION = /\/subscriptions\/0{8}-0{4}-0{4}-0{4}-0{12}\//i;

/** Every offline check of a stack. */
export function stackChecks(a: StackChecksArgs): Check[] {
  return [secrets(a), placeholders(a), expiries(a), names(a), kubeContext(a)];
}

function secrets(a: StackChecksArgs): Check {
  const findings: Finding[] = [];
  const set = (k: string): string => `pulumi config set --secret winfleet:${k} '<value>' -s ${a.stack.stack}`;
  for (const key of secretKeys(a.stack.fleet)) {
    const value = a.stack.secrets[key];
    if (value === undefined) findings.push(problem(`the secure key winfleet:${key} is not set`, set(key)));
    else if (typeof value !== "object" || value === null || !("secure" in value))
      findings.push(problem(`winfleet:${key} is in the stack file in plain text`, `${set(key)} (it encrypts it)`));
  }
  return { name: "secrets", needs: "stack", about: "every secure key the stack names is set, encrypted", findings };
}

function placeholders(a: StackChecksArgs): Check {
  const findings: Finding[] = [];
  a.text.split("\n").forEach((line, i) => {
    if (/^\s*#\s*REPLACE([^A-Za-z0-9_]|$)/.test(line))
      findings.push(
        problem(
          `line ${i + 1} still marks a value to replace: ${line.trim()}`,
          "set the value below the marker, then delete the marker",
        ),
      );
  });
  const f = a.stack.fleet;
  const digests: [string, string | undefined][] = [
    ["agent.bundle.sha256", f.agent?.bundle.sha256],
    ...Object.entries(f.content.variables)
      .filter(([k]) => k.endsWith("_SHA256"))
      .map(([k, v]): [string, string] => [`content.variables.${k}`, v]),
  ];
  for (const [path, value] of digests)
    if (value !== undefined && ZERO_DIGEST.test(value))
      findings.push(
        problem(`winfleet:fleet.${path} is all zeros`, "compute the file's SHA-256 (sha256sum) and set it"),
      );
  const ids = [
    ...f.pools.flatMap((p, i) => (p.kind === "azure" ? [[`pools[${i}].subnetId`, p.subnetId]] : [])),
    ["content.keyVault", f.content.keyVault],
  ] as [string, string | undefined][];
  for (const [path, value] of ids)
    if (value && ZERO_SUBSCRIPTION.test(value))
      findings.push(problem(`winfleet:fleet.${path} names the all-zero subscription`, "set the real resource id"));
  return { name: "placeholders", needs: "stack", about: "no sample value is left", findings };
}

/** A finding for an expiry at `at` (ISO 8601), named `what`. */
function expiry(what: string, at: string | undefined, now: Date, fix: string, absent?: Finding): Finding[] {
  if (at === undefined) return absent ? [absent] : [];
  const left = Date.parse(at) - now.getTime();
  if (left <= 0) return [problem(`${what} expired at ${at}`, fix)];
  if (left < EXPIRY_MARGIN_DAYS * DAY)
    return [warning(`${what} expires at ${at}, in ${Math.ceil(left / DAY)} days`, fix)];
  return [];
}

function expiries(a: StackChecksArgs): Check {
  const f = a.stack.fleet;
  const join = f.cluster?.join;
  const findings: Finding[] = [];
  if (join?.method === "kubeadm")
    findings.push(
      ...expiry(
        `the bootstrap token ${join.tokenId}`,
        join.tokenExpiry,
        a.now,
        "set a new tokenSecret and a later cluster.join.tokenExpiry together, then pulumi up (the cluster deletes an expired token, and nodes that scale out cannot join)",
        warning(
          `the bootstrap token ${join.tokenId} never expires: whoever reads one node's agent config can register nodes until it is rotated`,
          "set cluster.join.tokenExpiry (and rotate tokenSecret with it before then)",
        ),
      ),
    );
  const publish = f.content.publish;
  if (publish.to === "blob" && publish.auth === "sas")
    findings.push(
      ...expiry(
        "the content SAS",
        publish.sasExpiry,
        a.now,
        "set a later content.publish.sasExpiry and pulumi up (nodes and upgrader pods read content with it)",
      ),
    );
  return { name: "token-expiry", needs: "stack", about: "the join token and the content SAS are valid", findings };
}

// Where a stack's nodes join: two stacks with the same endpoint share a cluster.
function endpointOf(f: FleetConfig): string | undefined {
  const j = f.cluster?.join;
  if (!j) return undefined;
  try {
    return new URL(j.method === "kubeadm" ? j.apiServer : j.server).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

// The namespace a stack's cluster side goes into.
const namespaceOf = (s: StackFile): string => s.fleet.cluster?.namespace ?? defaultNamespace(s.stack);

function names(a: StackChecksArgs): Check {
  const f = a.stack.fleet;
  const findings: Finding[] = [];
  const here = endpointOf(f);
  for (const other of a.others) {
    const o = other.fleet;
    const where = `stack ${other.stack} (${other.file})`;
    if (here !== undefined && here === endpointOf(o)) {
      // Bootstrap token ids are derived from the project and stack, so two stacks never share one; the namespace
      // defaults to the stack's own, and only two stacks that name the same one share it.
      const [mine, theirs] = [namespaceOf(a.stack), namespaceOf(other)];
      if (mine === theirs)
        findings.push(
          problem(
            `${where} deploys to the same cluster and the same namespace ${mine}: either's destroy deletes the namespace, and what is in it, for both`,
            "give this stack a cluster.namespace of its own, or leave it to the stack's default (winfleet-<stack>)",
          ),
        );
    }
    const [p, q] = [f.content.publish, o.content.publish];
    if (p.to === "blob" && q.to === "blob" && p.storageAccount === q.storageAccount && p.container === q.container)
      findings.push(
        problem(
          `${where} publishes content to the same container ${p.storageAccount}/${p.container}: winfleet creates the container and destroy deletes it, with the other stack's content in it`,
          "give this stack a content.publish.container of its own",
        ),
      );
    const hosts = (x: FleetConfig): Set<string> =>
      new Set(x.pools.flatMap((pool) => (pool.kind === "byo" ? pool.hosts.map((h) => `${h.address}:${h.port}`) : [])));
    const theirs = hosts(o);
    for (const h of hosts(f))
      if (theirs.has(h))
        findings.push(
          problem(
            `${where} bootstraps the same host ${h}: both stacks would set it up, each with its own token`,
            "keep each host in one stack",
          ),
        );
  }
  return {
    name: "names",
    needs: "stack",
    about: `nothing this stack creates is also one of the ${a.others.length} other stacks' here`,
    findings,
  };
}

function kubeContext(a: StackChecksArgs): Check {
  const about = "the kube context the cluster side is deployed with";
  const cluster = a.stack.fleet.cluster;
  if (!cluster)
    return { name: "kube-context", needs: "stack", about: `${about}: the stack has no cluster`, findings: [] };
  const findings: Finding[] = [];
  if (!existsSync(a.kubeconfig))
    return {
      name: "kube-context",
      needs: "stack",
      about,
      findings: [problem(`there is no kubeconfig at ${a.kubeconfig}`, "point KUBECONFIG at the cluster's kubeconfig")],
    };
  try {
    const { contexts, current } = readKubeconfig(a.kubeconfig);
    const name = cluster.kubeContext ?? current;
    if (!cluster.kubeContext)
      findings.push(
        warning(
          `the stack names no kube context, so it deploys to the kubeconfig's current one (${current ?? "none"}), whatever that is when pulumi runs`,
          `set cluster.kubeContext (the contexts in ${a.kubeconfig}: ${contexts.join(", ") || "none"})`,
        ),
      );
    if (name === undefined || !contexts.includes(name)) {
      findings.push(
        problem(
          `${a.kubeconfig} has no context ${name ?? "(current)"}`,
          `add it, or set cluster.kubeContext to one of: ${contexts.join(", ") || "none"}`,
        ),
      );
      return { name: "kube-context", needs: "stack", about, findings };
    }
    const context = resolveContext(a.kubeconfig, name);
    const reached = new URL(context.server).hostname.toLowerCase();
    const joined = endpointOf(a.stack.fleet);
    if (joined !== undefined && reached !== joined)
      findings.push(
        warning(
          `context ${name} reaches ${context.server}, but nodes join ${joined}: the cluster side would be deployed to another cluster than the one the nodes join, unless both name the same one`,
          "check that the context and cluster.join name the same cluster",
        ),
      );
  } catch (e) {
    findings.push(problem((e as Error).message, `fix the kubeconfig at ${a.kubeconfig}`));
  }
  return { name: "kube-context", needs: "stack", about, findings };
}
