/**
 * The preflight checks that need the cluster: that the stack's kube context
 * reaches it, that its identity may create what the program creates (asked of
 * the API server's own authorizer, SelfSubjectAccessReview), and which of those
 * objects exist already. See preflight.ts.
 */
import { type KubeClient, KubeError } from "../agent/cluster";
import type { CreatedObject } from "./deployer-access";
import { type Check, type Finding, problem, warning } from "./preflight";

/** The label a stack's objects carry with the stack's name, when they do. */
export const STACK_LABEL = "winfleet.io/stack";

const groupVersion = (apiVersion: string): { group: string; version: string } =>
  apiVersion.includes("/")
    ? { group: apiVersion.split("/")[0] ?? "", version: apiVersion.split("/")[1] ?? "" }
    : { group: "", version: apiVersion };
const resourceOf = (kind: string): string => `${kind.toLowerCase()}s`;

/** The API path of an object. */
export function objectPath(o: CreatedObject): string {
  const { group, version } = groupVersion(o.apiVersion);
  const base = group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
  const ns = o.metadata.namespace ? `/namespaces/${o.metadata.namespace}` : "";
  return `${base}${ns}/${resourceOf(o.kind)}/${o.metadata.name}`;
}

const describeObject = (o: CreatedObject): string =>
  `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ""}${o.metadata.name}`;

/** The checks that need the cluster, as `client` (the stack's kube context) reaches it. */
export async function clusterChecks(
  client: KubeClient,
  objects: readonly CreatedObject[],
  stack: string,
): Promise<Check[]> {
  const reach: Check = {
    name: "cluster-reach",
    needs: "cluster",
    about: `the API server ${client.server}`,
    findings: [],
  };
  try {
    await client.get("/version");
  } catch (e) {
    const names = ["cluster-permissions", "cluster-objects"];
    return [
      {
        ...reach,
        findings: [
          problem(
            `${client.server} does not answer: ${(e as Error).message}`,
            "run from a machine (or a self-hosted runner) that reaches the API server, with a kubeconfig whose credentials it accepts",
          ),
        ],
      },
      ...names.map((name) => ({
        name,
        needs: "cluster" as const,
        about: "",
        findings: [],
        notRun: "the API server does not answer",
      })),
    ];
  }
  return [reach, await permissions(client, objects), await existing(client, objects, stack)];
}

async function permissions(client: KubeClient, objects: readonly CreatedObject[]): Promise<Check> {
  const asks = new Map<string, Record<string, string>>();
  for (const o of objects) {
    const { group } = groupVersion(o.apiVersion);
    // Someone else's object is patched or read by name; the rest are created.
    const attrs = {
      verb: o.shared === "read" ? "get" : o.shared === "patch" ? "patch" : "create",
      group,
      resource: resourceOf(o.kind),
      ...(o.shared ? { name: o.metadata.name } : {}),
      ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    };
    asks.set(JSON.stringify(attrs), attrs);
    if (o.roleRef) {
      const bind = {
        verb: "bind",
        group: "rbac.authorization.k8s.io",
        resource: resourceOf(o.roleRef.kind),
        name: o.roleRef.name,
        ...(o.roleRef.kind === "Role" && o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
      };
      asks.set(JSON.stringify(bind), bind);
    }
  }
  const findings: Finding[] = [];
  for (const attrs of asks.values()) {
    const review = await client.post<{ status: { allowed: boolean } }>(
      "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
      { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview", spec: { resourceAttributes: attrs } },
    );
    if (!review.status.allowed)
      findings.push(
        problem(
          `this identity may not ${attrs.verb} ${attrs.group ? `${attrs.group}/` : ""}${attrs.resource}${attrs.name ? ` ${attrs.name}` : ""}${attrs.namespace ? ` in ${attrs.namespace}` : ""}`,
          "bind the deploying identity to the roles `winfleet operator-stack` prints for this stack (or deploy as a cluster admin)",
        ),
      );
  }
  return {
    name: "cluster-permissions",
    needs: "cluster",
    about: `the deploying identity may create the ${objects.length} objects the program creates`,
    findings,
  };
}

async function existing(client: KubeClient, objects: readonly CreatedObject[], stack: string): Promise<Check> {
  const findings: Finding[] = [];
  // What the program patches or reads is meant to be someone else's.
  for (const o of objects.filter((x) => x.shared === undefined)) {
    let found: { metadata?: { labels?: Record<string, string> } } | undefined;
    try {
      found = await client.getOrUndefined(objectPath(o));
    } catch (e) {
      // Not allowed to read it: the permission check says what is missing.
      if (e instanceof KubeError && e.status === 403) continue;
      throw e;
    }
    if (!found) continue;
    const owner = found.metadata?.labels?.[STACK_LABEL];
    if (owner === stack) continue;
    if (o.kind === "Secret" && o.metadata.name.startsWith("bootstrap-token-"))
      findings.push(
        problem(
          `${describeObject(o)} exists already: the token id is someone else's (kubeadm's, or another stack's), and this stack would take it over and delete it on destroy`,
          "change cluster.join.tokenId: with the stack's name it seeds the ids of the stack's tokens",
        ),
      );
    else
      findings.push(
        warning(
          `${describeObject(o)} exists already${owner ? `, made by stack ${owner}` : ""}: unless an earlier up of this stack made it, this stack would take it over, and its destroy would delete it`,
          owner
            ? "give this stack names of its own (cluster.namespace, tokenId)"
            : "if this stack did not make it, rename or remove it first",
        ),
      );
  }
  return {
    name: "cluster-objects",
    needs: "cluster",
    about: "none of the objects the program creates belongs to someone else",
    findings,
  };
}
