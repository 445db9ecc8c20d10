/**
 * winfleet's node approver: it approves a node's first client certificate only
 * for a name the bootstrap token that asked was made for.
 *
 * kubeadm's clusters approve any `system:node:<name>` a bootstrap token asks
 * for (the csrapproving controller checks only that the requester may create
 * node client CSRs), so one node's token can mint a credential for any node,
 * control-plane ones included. winfleet's tokens are in a group of their own
 * that nothing approves automatically; for each pending node client CSR from
 * such a token, this approver reads which names the token was made for (the
 * `winfleet-node-names` ConfigMap ClusterJoin renders: one name for a node's
 * own token; for a scale set's, its name prefix and six letters or digits,
 * and only a name no Node has yet) and approves the CSR when it asks for
 * exactly such a name and nothing more (organization `system:nodes`, no
 * alternative names, client usages only), or denies it saying why. Renewals
 * (a node asking for its own name with its own certificate) are the built-in
 * approver's, which checks exactly that.
 */
import { csrSubject } from "./csr-subject";
import { KubeError, type KubeClient } from "./kube-client";

/** The group of winfleet's bootstrap tokens (rendered by ClusterJoin). */
export const WINFLEET_TOKEN_GROUP = "system:bootstrappers:winfleet:nodes";
/** The ConfigMap naming, per token id, the names it may join as (rendered by ClusterJoin). */
export const NODE_NAMES_CONFIGMAP = "winfleet-node-names";
const SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";
const CLIENT_USAGES = new Set(["digital signature", "key encipherment", "client auth"]);

/** A node client CSR as the API returns it. */
export interface Csr {
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly request: string;
    readonly signerName: string;
    readonly usages?: readonly string[];
    readonly username?: string;
    readonly groups?: readonly string[];
  };
  readonly status?: { readonly conditions?: readonly { readonly type: string }[] };
}

/** What a token may join as. */
export interface TokenNames {
  readonly pool: string;
  readonly names?: readonly string[];
  readonly prefix?: string;
}

/** The verdict on one CSR: approve, deny with a reason, or leave it (not a winfleet token's). */
export type Verdict = { readonly approve: true } | { readonly approve: false; readonly reason: string } | undefined;

/**
 * Judges one CSR (pure): `names` maps token ids to what they may join as; `registered` says whether a Node has a
 * name.
 */
export function judge(
  csr: Csr,
  names: ReadonlyMap<string, TokenNames>,
  registered: (name: string) => boolean,
): Verdict {
  const { spec } = csr;
  if (spec.signerName !== SIGNER) return undefined;
  if (csr.status?.conditions?.some((c) => ["Approved", "Denied", "Failed"].includes(c.type))) return undefined;
  const id = /^system:bootstrap:([a-z0-9]{6})$/.exec(spec.username ?? "")?.[1];
  if (id === undefined || !(spec.groups ?? []).includes(WINFLEET_TOKEN_GROUP)) return undefined;
  const allowed = names.get(id);
  // Another stack sharing the cluster made it (each stack's approver reads its own names): its approver judges it.
  // A token no stack made stays unapproved, and the CSR expires.
  if (!allowed) return undefined;
  let subject;
  try {
    subject = csrSubject(Buffer.from(spec.request, "base64").toString("utf8"));
  } catch (e) {
    return { approve: false, reason: `the request cannot be read: ${e instanceof Error ? e.message : String(e)}` };
  }
  const usages = spec.usages ?? [];
  if (!usages.includes("client auth") || usages.some((u) => !CLIENT_USAGES.has(u)))
    return { approve: false, reason: `usages ${usages.join(", ")} are not a node client certificate's` };
  if (subject.organizations.length !== 1 || subject.organizations[0] !== "system:nodes")
    return {
      approve: false,
      reason: `organization ${subject.organizations.join(", ") || "(none)"} is not system:nodes alone`,
    };
  if (subject.alternativeNames) return { approve: false, reason: "a node client certificate has no alternative names" };
  const cn = subject.commonNames.length === 1 ? subject.commonNames[0] : undefined;
  const name = cn?.startsWith("system:node:") ? cn.slice("system:node:".length) : undefined;
  if (name === undefined || name === "")
    return {
      approve: false,
      reason: `common name ${subject.commonNames.join(", ") || "(none)"} is not system:node:<name>`,
    };
  if (allowed.names?.includes(name)) return { approve: true };
  const escaped = (allowed.prefix ?? "").replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  if (allowed.prefix !== undefined && new RegExp(`^${escaped}[0-9a-z]{6}$`).test(name)) {
    // A scale set's token is shared by its machines: it may not take a name that has joined already.
    if (registered(name))
      return {
        approve: false,
        reason: `node ${name} is registered already; a scale set's token may not take its name`,
      };
    return { approve: true };
  }
  const made = allowed.names ? allowed.names.join(", ") : `${allowed.prefix ?? ""} and six letters or digits`;
  return {
    approve: false,
    reason: `bootstrap token ${id} (pool ${allowed.pool}) was made for ${made}, not for ${name}`,
  };
}

/** Reads the names per token from the ConfigMap's data (a malformed entry allows nothing). */
export function tokenNames(data: Readonly<Record<string, string>>): Map<string, TokenNames> {
  const out = new Map<string, TokenNames>();
  for (const [id, text] of Object.entries(data)) {
    try {
      const v = JSON.parse(text) as { pool?: unknown; names?: unknown; prefix?: unknown };
      const names = Array.isArray(v.names) ? v.names.filter((n): n is string => typeof n === "string") : undefined;
      out.set(id, {
        pool: typeof v.pool === "string" ? v.pool : "",
        ...(names ? { names } : {}),
        ...(typeof v.prefix === "string" && v.prefix !== "" ? { prefix: v.prefix } : {}),
      });
    } catch {
      out.set(id, { pool: "" });
    }
  }
  return out;
}

/** What one pass did, for logs. */
export interface ApprovalPass {
  readonly approved: readonly string[];
  readonly denied: readonly { readonly csr: string; readonly reason: string }[];
}

/** One pass over the pending node client CSRs: each of a winfleet token is approved or denied. */
export async function approveNodeCsrs(api: KubeClient, namespace: string): Promise<ApprovalPass> {
  const csrs = await api.get<{ items: Csr[] }>(
    `/apis/certificates.k8s.io/v1/certificatesigningrequests?fieldSelector=${encodeURIComponent(`spec.signerName=${SIGNER}`)}`,
  );
  const pending = csrs.items.filter((c) => judgeable(c));
  if (pending.length === 0) return { approved: [], denied: [] };
  const map = await api
    .get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${namespace}/configmaps/${NODE_NAMES_CONFIGMAP}`)
    .catch((e: unknown) => {
      if (e instanceof KubeError && e.status === 404) return { data: {} };
      throw e;
    });
  const names = tokenNames(map.data ?? {});
  const nodes = await api.get<{ items: { metadata: { name: string } }[] }>("/api/v1/nodes");
  const known = new Set(nodes.items.map((n) => n.metadata.name));
  const approved: string[] = [];
  const denied: { csr: string; reason: string }[] = [];
  for (const csr of pending) {
    const verdict = judge(csr, names, (n) => known.has(n));
    if (verdict === undefined) continue;
    const condition = verdict.approve
      ? {
          type: "Approved",
          status: "True",
          reason: "WinfleetNodeName",
          message: "the name its bootstrap token was made for",
        }
      : { type: "Denied", status: "True", reason: "WinfleetNodeName", message: verdict.reason };
    const path = `/apis/certificates.k8s.io/v1/certificatesigningrequests/${csr.metadata.name}`;
    await api.put(`${path}/approval`, { ...csr, status: { ...csr.status, conditions: [condition] } });
    if (verdict.approve) approved.push(csr.metadata.name);
    else denied.push({ csr: csr.metadata.name, reason: verdict.reason });
  }
  return { approved, denied };
}

function judgeable(c: Csr): boolean {
  return (
    !c.status?.conditions?.some((x) => ["Approved", "Denied", "Failed"].includes(x.type)) &&
    (c.spec.groups ?? []).includes(WINFLEET_TOKEN_GROUP)
  );
}

/** Runs passes every `intervalMs` until `signal` aborts; a failed pass is reported and retried. */
export async function runNodeApprover(
  /** The approver's identity, or a way to make it at each pass (an in-cluster token the kubelet rotates). */
  api: KubeClient | (() => KubeClient),
  namespace: string,
  options: {
    intervalMs?: number;
    signal: AbortSignal;
    onPass?: (p: ApprovalPass) => void;
    onError?: (e: unknown) => void;
  },
): Promise<void> {
  while (!options.signal.aborted) {
    try {
      const pass = await approveNodeCsrs(typeof api === "function" ? api() : api, namespace);
      if (pass.approved.length > 0 || pass.denied.length > 0) options.onPass?.(pass);
    } catch (e) {
      options.onError?.(e);
    }
    await new Promise<void>((resolve) => {
      // The listener goes with the wait: one left per pass would pile up on the signal as long as the approver runs.
      const done = () => {
        clearTimeout(timer);
        options.signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, options.intervalMs ?? 2000);
      options.signal.addEventListener("abort", done, { once: true });
    });
  }
}
