/**
 * A kubeconfig as Pulumi's Kubernetes provider reads it: `KUBECONFIG` (the
 * first file of a list, as winfleet's workflows and most setups have it) or
 * ~/.kube/config, a context by name or the current one, and that context's
 * cluster and user. `winfleet preflight` uses it to say which cluster a stack
 * would reach, and to reach it.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { parse } from "yaml";

/** One context of a kubeconfig, resolved. */
export interface KubeContext {
  readonly file: string;
  readonly name: string;
  readonly server: string;
  /** PEM, when the kubeconfig names a CA (data or file). */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly token?: string;
  /** Set when the user authenticates through an exec plugin (az, kubelogin, gke-gcloud-auth-plugin…). */
  readonly exec?: string;
}

interface Doc {
  "current-context"?: string;
  contexts?: { name: string; context?: { cluster?: string; user?: string } }[];
  clusters?: { name: string; cluster?: Record<string, unknown> }[];
  users?: { name: string; user?: Record<string, unknown> }[];
}

/** The kubeconfig file the provider would read. */
export function kubeconfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const first = (env.KUBECONFIG ?? "").split(delimiter).find((p) => p !== "");
  return first ?? join(homedir(), ".kube", "config");
}

/** The names of a kubeconfig's contexts and its current one; throws naming the file when it cannot be read. */
export function readKubeconfig(file: string): {
  readonly doc: Doc;
  readonly contexts: string[];
  readonly current?: string;
} {
  let doc: Doc;
  try {
    doc = (parse(readFileSync(file, "utf8")) ?? {}) as Doc;
  } catch (e) {
    throw new Error(`${file}: ${(e as Error).message.split("\n")[0] ?? "unreadable"}`);
  }
  const contexts = (doc.contexts ?? []).map((c) => c.name);
  return { doc, contexts, ...(doc["current-context"] ? { current: doc["current-context"] } : {}) };
}

/** The context `name` (the current one without a name), resolved to its server and credentials. */
export function resolveContext(file: string, name?: string): KubeContext {
  const { doc, contexts, current } = readKubeconfig(file);
  const wanted = name ?? current;
  if (!wanted) throw new Error(`${file} has no current context, and none was named`);
  const context = (doc.contexts ?? []).find((c) => c.name === wanted)?.context;
  if (!context) throw new Error(`${file} has no context ${wanted} (it has: ${contexts.join(", ") || "none"})`);
  const cluster = (doc.clusters ?? []).find((c) => c.name === context.cluster)?.cluster;
  if (!cluster || typeof cluster.server !== "string")
    throw new Error(`${file}: context ${wanted} names cluster ${context.cluster ?? "(none)"}, which has no server`);
  const user = (doc.users ?? []).find((u) => u.name === context.user)?.user ?? {};
  const base = dirname(file);
  const data = (o: Record<string, unknown>, key: string): string | undefined => {
    const inline = o[`${key}-data`];
    if (typeof inline === "string") return Buffer.from(inline, "base64").toString();
    const path = o[key];
    if (typeof path === "string") return readFileSync(isAbsolute(path) ? path : join(base, path), "utf8");
    return undefined;
  };
  const ca = data(cluster, "certificate-authority");
  const cert = data(user, "client-certificate");
  const key = data(user, "client-key");
  const tokenFile = typeof user.tokenFile === "string" ? user.tokenFile : undefined;
  const token =
    typeof user.token === "string"
      ? user.token
      : tokenFile
        ? readFileSync(isAbsolute(tokenFile) ? tokenFile : join(base, tokenFile), "utf8").trim()
        : undefined;
  const exec = (user.exec as { command?: unknown } | undefined)?.command;
  return {
    file,
    name: wanted,
    server: cluster.server,
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(token ? { token } : {}),
    ...(typeof exec === "string" ? { exec } : {}),
  };
}
