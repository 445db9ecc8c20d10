/**
 * Joining test nodes to a throwaway control plane as a winfleet stack would: a
 * bootstrap token made for given node names, the TLS-bootstrap bindings, and
 * winfleet's node approver running for it (nothing else approves a node's
 * first certificate).
 */
import { type KubeClient, KubeError } from "../../agent/cluster/kube-client";
import { runNodeApprover } from "../../agent/cluster/node-approver";
import { renderKubeadmJoin, renderNodeApproval } from "../../components/cluster-render";
import type { KubeObject } from "../../components/kube-objects";

const NS = "winfleet-system";

/** The REST collection an object is created in. */
export function collectionOf(o: KubeObject): string {
  const plural = `${o.kind.toLowerCase()}s`;
  const base = o.apiVersion === "v1" ? "/api/v1" : `/apis/${o.apiVersion}`;
  return o.metadata.namespace ? `${base}/namespaces/${o.metadata.namespace}/${plural}` : `${base}/${plural}`;
}

/** Creates `objects` in order; one that exists already is left as it is. */
export async function createObjects(admin: KubeClient, objects: readonly KubeObject[]): Promise<void> {
  for (const o of objects)
    await admin.post(collectionOf(o), o).catch((e: unknown) => {
      if (!(e instanceof KubeError && e.status === 409)) throw e;
    });
}

/** An expiry a day away (RFC 3339). */
export function dayAway(): string {
  return new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/**
 * Makes `token` a winfleet bootstrap token for `names` and runs the approver for it; returns what stops
 * the approver (call it before the control plane stops).
 */
export async function joinableBy(
  admin: KubeClient,
  token: { readonly id: string; readonly secret: string },
  names: readonly string[],
): Promise<() => void> {
  await createObjects(admin, [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
    ...renderKubeadmJoin("test", token.id, token.secret, "winfleet test nodes", dayAway()),
    ...renderNodeApproval(NS, "test", [{ id: token.id, pool: "test", names }]),
  ]);
  const stop = new AbortController();
  void runNodeApprover(admin, NS, { signal: stop.signal, intervalMs: 300 });
  return () => stop.abort();
}
