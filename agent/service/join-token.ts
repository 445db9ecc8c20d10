/**
 * The join token leaves the node once it has joined. A kubeadm-style node joins
 * by TLS bootstrap: the kubelet trades the bootstrap token for a client
 * certificate of its own and rotates that certificate from then on, so nothing
 * on the node needs the token again (join-kubeadm deletes its bootstrap
 * kubeconfig then). The agent config is the other place it stays: once the
 * config's `kubeconfig` holds a client certificate, `serve` rewrites the config
 * without the token.
 *
 * RKE2's token is not removed: RKE2's agent authenticates to its server with it
 * on every start (it is in RKE2's own config file on the node for that reason),
 * so an RKE2 node keeps it; its tokens are per node and expire all the same.
 */
import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import { writeFileAtomic } from "../common";
import { parseAgentConfig } from "./config";

/** Secret variables that only ever serve to join: once the node has its own certificate, nothing reads them. */
export const JOIN_ONLY_SECRETS: readonly string[] = ["KUBE_BOOTSTRAP_TOKEN"];

type Kubeconfig = { users?: { user?: Record<string, unknown> }[] };

/**
 * Whether a kubeconfig's text holds a client certificate and key (a file path or inline data), as
 * the kubelet's kubelet.conf and the node stand-in's kubeconfig do after TLS bootstrap; a
 * kubeconfig with only a token (a bootstrap kubeconfig) does not count.
 */
export function holdsClientCertificate(text: string): boolean {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch {
    return false;
  }
  const users = (doc as Kubeconfig | null)?.users;
  if (!Array.isArray(users)) return false;
  const set = (u: Record<string, unknown>, key: string): boolean => typeof u[key] === "string" && u[key] !== "";
  return users.some((entry) => {
    const u = entry?.user;
    if (!u || typeof u !== "object") return false;
    const cert = set(u, "client-certificate") || set(u, "client-certificate-data");
    const key = set(u, "client-key") || set(u, "client-key-data");
    return cert && key;
  });
}

/**
 * The agent config document without its join-only secrets, and their names; `undefined` when it
 * holds none. Everything else (other secrets included) is kept as it is.
 */
export function withoutJoinSecrets(
  doc: Readonly<Record<string, unknown>>,
): { doc: Record<string, unknown>; removed: string[] } | undefined {
  const secrets = doc.secrets;
  if (!secrets || typeof secrets !== "object" || Array.isArray(secrets)) return undefined;
  const kept: Record<string, unknown> = {};
  const removed: string[] = [];
  for (const [name, value] of Object.entries(secrets)) {
    if (JOIN_ONLY_SECRETS.includes(name)) removed.push(name);
    else kept[name] = value;
  }
  return removed.length === 0 ? undefined : { doc: { ...doc, secrets: kept }, removed };
}

/**
 * Removes the join-only secrets from the agent config `file` once `kubeconfig` holds the node's
 * own client certificate; returns the names removed (none when the node has not joined, or the
 * config holds none). The config is replaced in one atomic write, readable by its owner only, and
 * only if it did not change while this ran (the upgrader's retarget rewrites the same file), so
 * neither write is lost: a config that changed is left for the next call.
 */
export async function forgetJoinToken(file: string, kubeconfig: string | undefined): Promise<string[]> {
  if (kubeconfig === undefined) return [];
  let credential: string;
  try {
    credential = await readFile(kubeconfig, "utf8");
  } catch {
    return []; // not joined yet
  }
  if (!holdsClientCertificate(credential)) return [];
  const text = await readFile(file, "utf8");
  const next = withoutJoinSecrets((parseYaml(text) ?? {}) as Record<string, unknown>);
  if (!next) return [];
  const out = `${JSON.stringify(next.doc, null, 2)}\n`;
  parseAgentConfig(out, file); // never write a config the agent would not read
  if ((await readFile(file, "utf8")) !== text) return [];
  await writeFileAtomic(file, out, { mode: 0o600 });
  return next.removed;
}
