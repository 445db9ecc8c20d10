/**
 * The node's kubeconfig, read the way kubectl (client-go) reads one, for the
 * three requests the reporter makes. Only what a node's credentials use is
 * supported, and the rest is refused by name rather than ignored, since an
 * ignored setting is a silently different identity or trust:
 * - the cluster: `server`, `certificate-authority` or `-data`,
 *   `insecure-skip-tls-verify` (never together with a CA, as kubectl),
 *   `tls-server-name`, and `proxy-url` (http, https or socks5, as client-go;
 *   proxy-tunnel.ts);
 * - the user: `client-certificate`/`client-key` (files or `-data`), `token`,
 *   `tokenFile` (`token` wins when both are set, as in client-go),
 *   `username`/`password`, an `exec` credential plugin
 *   (exec-credential.ts), and impersonation (`as`, `as-uid`, `as-groups`,
 *   `as-user-extra`);
 * - refused: `auth-provider` (removed from kubectl for Azure and GCP; OIDC
 *   needs a refresh flow a service cannot finish).
 *
 * Paths are relative to the kubeconfig's folder, as in client-go. Files are
 * read again for each request, so a kubelet's rotated client certificate
 * (`kubelet-client-current.pem` re-pointed) is picked up without a restart.
 *
 * This replaces @kubernetes/client-node's KubeConfig, which was half of the
 * agent bundle (1.2 MB of 2.5 MB) for the same few settings; the TLS itself is
 * Node's (node:https verifies the server against the CA, or the system's).
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ValidationError, formatPath, zodIssues } from "../common";
import { type ExecClusterInfo, type ExecConfig, execConfigSchema } from "./exec-credential";
import { PROXY_SCHEMES } from "./proxy-tunnel";

const clusterSchema = z.looseObject({
  server: z.string().min(1),
  "certificate-authority": z.string().min(1).optional(),
  "certificate-authority-data": z.string().min(1).optional(),
  "insecure-skip-tls-verify": z.boolean().optional(),
  "tls-server-name": z.string().min(1).optional(),
  "proxy-url": z.string().min(1).optional(),
});

const userSchema = z.looseObject({
  "client-certificate": z.string().min(1).optional(),
  "client-certificate-data": z.string().min(1).optional(),
  "client-key": z.string().min(1).optional(),
  "client-key-data": z.string().min(1).optional(),
  token: z.string().min(1).optional(),
  tokenFile: z.string().min(1).optional(),
  username: z.string().min(1).optional(),
  password: z.string().optional(),
  as: z.string().min(1).optional(),
  "as-uid": z.string().min(1).optional(),
  "as-groups": z.array(z.string().min(1)).optional(),
  "as-user-extra": z.record(z.string(), z.array(z.string())).optional(),
  exec: execConfigSchema.optional(),
  "auth-provider": z
    .never({ error: "auth-provider is not supported: use client certificates, a token, or an exec plugin" })
    .optional(),
});

const kubeconfigSchema = z.looseObject({
  clusters: z.array(z.looseObject({ name: z.string().min(1), cluster: clusterSchema })).default([]),
  users: z.array(z.looseObject({ name: z.string().min(1), user: userSchema.default({}) })).default([]),
  contexts: z
    .array(
      z.looseObject({
        name: z.string().min(1),
        context: z.looseObject({ cluster: z.string().min(1), user: z.string().min(1).optional() }),
      }),
    )
    .default([]),
  "current-context": z.string().optional(),
});

type Cluster = z.infer<typeof clusterSchema>;
type User = z.infer<typeof userSchema>;

/** The TLS settings and headers a request carries; the credentials part is read again per request. */
export interface ApiCredentials {
  /** PEM bytes of the CA to trust; undefined: the system's. */
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly servername?: string;
  readonly rejectUnauthorized: boolean;
  /** Authorization and Impersonate-* headers. */
  readonly headers: Readonly<Record<string, string | string[]>>;
}

/** A resolved kubeconfig: its current context's server, and how to make its credentials. */
export interface Kubeconfig {
  readonly file: string;
  readonly server: URL;
  /** The cluster and user as written, paths already absolute. */
  readonly cluster: Cluster;
  readonly user: User;
  /** The current user's exec plugin, with its command resolved as client-go does. */
  readonly exec?: ExecConfig;
  /** The cluster's `proxy-url`: every request goes through it. */
  readonly proxy?: URL;
}

/**
 * Reads and checks the kubeconfig at `file` and resolves its current context.
 * Throws a ValidationError naming the path of each bad value.
 */
export function loadKubeconfig(file: string, text: string = readFileSync(file, "utf8")): Kubeconfig {
  const subject = `kubeconfig ${file}`;
  const fail = (path: string, message: string): never => {
    throw new ValidationError(subject, [{ path, message, severity: "error" }]);
  };
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    return fail("", `not YAML: ${(e as Error).message}`);
  }
  const parsed = kubeconfigSchema.safeParse(doc ?? {});
  if (!parsed.success) throw new ValidationError(subject, zodIssues(parsed.error));
  const k = parsed.data;

  const current = k["current-context"];
  if (!current) return fail("current-context", "not set: the agent uses the current context");
  const contextAt = k.contexts.findIndex((c) => c.name === current);
  if (contextAt < 0) return fail("current-context", `names ${JSON.stringify(current)}, which contexts does not hold`);
  const context = k.contexts[contextAt]!.context;
  const clusterAt = k.clusters.findIndex((c) => c.name === context.cluster);
  if (clusterAt < 0)
    return fail(
      formatPath(["contexts", contextAt, "context", "cluster"]),
      `names ${JSON.stringify(context.cluster)}, which clusters does not hold`,
    );
  const userAt = context.user === undefined ? -1 : k.users.findIndex((u) => u.name === context.user);
  if (context.user !== undefined && userAt < 0)
    return fail(
      formatPath(["contexts", contextAt, "context", "user"]),
      `names ${JSON.stringify(context.user)}, which users does not hold`,
    );

  const at = (...p: (string | number)[]): string => formatPath(p);
  const cluster = { ...k.clusters[clusterAt]!.cluster };
  const user: User = userAt < 0 ? {} : { ...k.users[userAt]!.user };
  const cp = (...p: string[]): string => at("clusters", clusterAt, "cluster", ...p);
  const up = (...p: string[]): string => at("users", userAt, "user", ...p);

  let server: URL;
  try {
    server = new URL(cluster.server);
  } catch {
    return fail(cp("server"), `${JSON.stringify(cluster.server)} is not a URL`);
  }
  if (server.protocol !== "https:" && server.protocol !== "http:")
    fail(cp("server"), `${server.protocol} is not http: or https:`);
  const proxy =
    cluster["proxy-url"] === undefined
      ? undefined
      : proxyUrl(cluster["proxy-url"], (message) => fail(cp("proxy-url"), message));
  if (
    cluster["insecure-skip-tls-verify"] &&
    (cluster["certificate-authority"] || cluster["certificate-authority-data"])
  )
    fail(
      cp("insecure-skip-tls-verify"),
      "set together with a certificate authority: trust one or skip verification, not both (as kubectl)",
    );
  const both = (a: keyof User, b: keyof User, where: (...p: string[]) => string): void => {
    if (user[a] !== undefined && user[b] !== undefined) fail(where(b), `set together with ${a}: give one`);
  };
  both("client-certificate", "client-certificate-data", up);
  both("client-key", "client-key-data", up);
  if (cluster["certificate-authority"] && cluster["certificate-authority-data"])
    fail(cp("certificate-authority-data"), "set together with certificate-authority: give one");
  const hasCert = user["client-certificate"] !== undefined || user["client-certificate-data"] !== undefined;
  const hasKey = user["client-key"] !== undefined || user["client-key-data"] !== undefined;
  if (hasCert !== hasKey)
    fail(up(hasCert ? "client-key" : "client-certificate"), "missing: a client certificate and its key come together");
  if ((user.token !== undefined || user.tokenFile !== undefined) && user.username !== undefined)
    fail(up("username"), "set together with a token: give one way to authenticate");
  if (user.password !== undefined && user.username === undefined) fail(up("password"), "set without username");

  const dir = dirname(file);
  const abs = (p: string | undefined): string | undefined => (p === undefined || isAbsolute(p) ? p : join(dir, p));
  cluster["certificate-authority"] = abs(cluster["certificate-authority"]);
  user["client-certificate"] = abs(user["client-certificate"]);
  user["client-key"] = abs(user["client-key"]);
  user.tokenFile = abs(user.tokenFile);
  // client-go: a command with a separator is relative to the kubeconfig; a bare name is looked up on PATH.
  const exec = user.exec && {
    ...user.exec,
    command: /[\\/]/.test(user.exec.command) ? (abs(user.exec.command) as string) : user.exec.command,
  };
  return { file, server, cluster, user, ...(exec ? { exec } : {}), ...(proxy ? { proxy } : {}) };
}

/** A `proxy-url` as client-go takes one: a URL with an http, https or socks5 scheme and a host; no path. */
function proxyUrl(text: string, fail: (message: string) => never): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // The value may carry credentials: the message does not repeat it.
    return fail("is not a URL");
  }
  const scheme = url.protocol as (typeof PROXY_SCHEMES)[number];
  if (!PROXY_SCHEMES.includes(scheme))
    return fail(`${url.protocol} is not one of ${PROXY_SCHEMES.join(", ")} (what client-go accepts)`);
  if (url.hostname === "") return fail("names no host");
  if ((url.pathname !== "" && url.pathname !== "/") || url.search !== "" || url.hash !== "")
    return fail("has a path, query or fragment: a proxy is a scheme, a host and a port");
  return url;
}

/** Reads a file a kubeconfig names, or decodes its `-data` twin; the message names which. */
function material(path: string | undefined, data: string | undefined, what: string, file: string): Buffer | undefined {
  if (path !== undefined) {
    try {
      return readFileSync(path);
    } catch (e) {
      throw new Error(
        `kubeconfig ${file}: cannot read the ${what} ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
  }
  if (data === undefined) return undefined;
  if (!/^[A-Za-z0-9+/=\s]+$/.test(data)) throw new Error(`kubeconfig ${file}: the ${what} data is not base64`);
  return Buffer.from(data, "base64");
}

/**
 * The TLS material and headers for one request, read now from the files the
 * kubeconfig names; `exec` supplies the plugin's credential when there is one.
 */
export function credentialsFor(k: Kubeconfig, exec?: { token?: string; cert?: Buffer; key?: Buffer }): ApiCredentials {
  const { cluster, user, file } = k;
  const headers: Record<string, string | string[]> = {};
  const token =
    user.token ??
    (user.tokenFile !== undefined
      ? material(user.tokenFile, undefined, "token file", file)!.toString("utf8").trim()
      : undefined);
  const bearer = exec?.token ?? token;
  if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`;
  else if (user.username !== undefined)
    headers.authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ""}`).toString("base64")}`;
  if (user.as !== undefined) headers["impersonate-user"] = user.as;
  if (user["as-uid"] !== undefined) headers["impersonate-uid"] = user["as-uid"];
  if (user["as-groups"]?.length) headers["impersonate-group"] = user["as-groups"];
  for (const [key, values] of Object.entries(user["as-user-extra"] ?? {}))
    headers[`impersonate-extra-${encodeURIComponent(key)}`] = values;
  const ca = material(
    cluster["certificate-authority"],
    cluster["certificate-authority-data"],
    "certificate authority",
    file,
  );
  const cert =
    exec?.cert ?? material(user["client-certificate"], user["client-certificate-data"], "client certificate", file);
  const key = exec?.key ?? material(user["client-key"], user["client-key-data"], "client key", file);
  return {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(cluster["tls-server-name"] ? { servername: cluster["tls-server-name"] } : {}),
    rejectUnauthorized: cluster["insecure-skip-tls-verify"] !== true,
    headers,
  };
}

/** `spec.cluster` for an exec plugin that asks for it (`provideClusterInfo`), as client-go fills it. */
export function execClusterInfo(k: Kubeconfig): ExecClusterInfo {
  const c = k.cluster;
  const ca = material(c["certificate-authority"], c["certificate-authority-data"], "certificate authority", k.file);
  const extensions = Array.isArray(c.extensions) ? (c.extensions as { name?: unknown; extension?: unknown }[]) : [];
  const config = extensions.find((e) => e.name === "client.authentication.k8s.io/exec")?.extension;
  return {
    server: c.server,
    ...(c["tls-server-name"] ? { "tls-server-name": c["tls-server-name"] } : {}),
    ...(c["insecure-skip-tls-verify"] ? { "insecure-skip-tls-verify": true } : {}),
    ...(ca ? { "certificate-authority-data": ca.toString("base64") } : {}),
    ...(c["proxy-url"] ? { "proxy-url": c["proxy-url"] } : {}),
    ...(config !== undefined ? { config } : {}),
  };
}
