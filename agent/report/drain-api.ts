/**
 * The drain's requests, made with the node's own credential (the kubeconfig the reporter uses):
 * read and cordon its own Node, list the pods bound to it, and evict them through the eviction
 * subresource. The Node authorizer and NodeRestriction grant a node exactly these and no more:
 * `patch` on its own Node (a node may change `spec.unschedulable`, not its taints or labels),
 * `list` pods with the field selector `spec.nodeName=<itself>`, and `create` on `pods/eviction`
 * for pods bound to itself. Nothing is added to its RBAC (docs/security.md).
 */
import { existsSync } from "node:fs";
import { AgentError, AgentErrorCode, DEFAULT_DRAIN, type DrainSettings } from "../common";
import type { DrainPod, Drainer, EvictionResult, NodeDrainApi } from "../lifecycle";
import { type AgentConfig, reportConfigSchema } from "../service";
import { type NodeApi, NodeApiError, nodeApiFromKubeconfig } from "./node-api";

interface PodObject {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
  };
  spec?: { volumes?: { emptyDir?: unknown }[] };
  status?: { phase?: string };
}

type Status = { message?: string; details?: { causes?: { reason?: string; message?: string }[] } };

function parse<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new NodeApiError(`${what}: the answer is not JSON`, undefined);
  }
}

const failed = (what: string, r: { status: number; text: string }): NodeApiError =>
  new NodeApiError(
    `${what}: ${r.status} ${(parse<Status>(r.text || "{}", what).message ?? r.text).slice(0, 300)}`,
    r.status,
  );

/** A pod as the drain reads it. */
export function drainPod(p: PodObject): DrainPod {
  const controller = p.metadata.ownerReferences?.find((o) => o.controller === true);
  return {
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    uid: p.metadata.uid,
    deleting: p.metadata.deletionTimestamp !== undefined,
    phase: p.status?.phase ?? "",
    mirror: p.metadata.annotations?.["kubernetes.io/config.mirror"] !== undefined,
    ...(controller ? { controller: { kind: controller.kind, name: controller.name } } : {}),
    emptyDir: (p.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined),
  };
}

/** The drain's API for `nodeName` over a node's {@link NodeApi}. */
export function nodeDrainApi(api: NodeApi, nodeName: string): NodeDrainApi {
  const node = `/api/v1/nodes/${encodeURIComponent(nodeName)}`;
  return {
    async unschedulable() {
      const r = await api.request("GET", node);
      if (r.status === 404) return undefined;
      if (r.status !== 200) throw failed(`GET ${node}`, r);
      return parse<{ spec?: { unschedulable?: boolean } }>(r.text, `GET ${node}`).spec?.unschedulable === true;
    },
    async setUnschedulable(value) {
      // As kubectl: a cordon sets the flag, an uncordon removes it.
      const r = await api.request("PATCH", node, { spec: { unschedulable: value ? true : null } });
      if (r.status !== 200) throw failed(`PATCH ${node}`, r);
    },
    async pods(selector) {
      const query = new URLSearchParams({ fieldSelector: `spec.nodeName=${nodeName}` });
      if (selector !== "") query.set("labelSelector", selector);
      const path = `/api/v1/pods?${query.toString()}`;
      const r = await api.request("GET", path);
      if (r.status !== 200) throw failed(`GET ${path}`, r);
      return parse<{ items?: PodObject[] }>(r.text, `GET ${path}`).items?.map(drainPod) ?? [];
    },
    async evict(pod): Promise<EvictionResult> {
      const path = `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods/${encodeURIComponent(pod.name)}/eviction`;
      const r = await api.request("POST", path, {
        apiVersion: "policy/v1",
        kind: "Eviction",
        metadata: { name: pod.name, namespace: pod.namespace },
        // Only this pod: one of the same name made since is another pod.
        deleteOptions: { preconditions: { uid: pod.uid } },
      });
      if (r.status === 200 || r.status === 201) return { kind: "evicted" };
      if (r.status === 404 || r.status === 409) return { kind: "gone" };
      if (r.status === 429) {
        const s = parse<Status>(r.text || "{}", `POST ${path}`);
        const causes = (s.details?.causes ?? []).map((c) => c.message ?? "").filter((m) => m !== "");
        return { kind: "blocked", messages: causes.length > 0 ? causes : [s.message ?? "too many requests"] };
      }
      const error = failed(`POST ${path}`, r);
      // Two budgets over one pod: the API server refuses every eviction of it until someone fixes them.
      if (r.status === 500 && /more than one PodDisruptionBudget/.test(r.text))
        Object.defineProperty(error, "retryable", { value: false });
      return Promise.reject(error);
    },
  };
}

/**
 * The drainer `serve` and `apply` use for an agent config: the node's kubeconfig (the `report`
 * section's, else the config's own) and the config's `drain` knobs. A kubeconfig that does not
 * exist yet means a node that has not joined: nothing to drain.
 */
export function createDrainer(
  config: AgentConfig | undefined,
  nodeName: string,
  options: { readonly kubeconfig?: string | undefined; readonly supersede?: AbortSignal } = {},
): Drainer | undefined {
  const report = config?.report ?? reportConfigSchema.parse({});
  const kubeconfig = options.kubeconfig ?? report.kubeconfig ?? config?.kubeconfig;
  const settings: DrainSettings = config?.drain ?? DEFAULT_DRAIN;
  if (kubeconfig === undefined) return undefined;
  let cached: NodeDrainApi | undefined;
  return {
    settings,
    ...(options.supersede ? { supersede: options.supersede } : {}),
    async api() {
      if (cached) return cached;
      if (!existsSync(kubeconfig)) return undefined;
      let api: NodeApi;
      try {
        api = await nodeApiFromKubeconfig(kubeconfig, report.requestTimeoutSeconds * 1000);
      } catch (e) {
        // A kubeconfig that cannot be read as one will not become readable by waiting.
        throw Object.assign(
          new AgentError(AgentErrorCode.InvalidInput, `the node's kubeconfig ${kubeconfig}: ${(e as Error).message}`),
          { retryable: false },
        );
      }
      cached = nodeDrainApi(api, nodeName);
      return cached;
    },
  };
}
