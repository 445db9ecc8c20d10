/**
 * The three requests the reporter makes, with the node's own credentials (its
 * kubeconfig, read by kubeconfig.ts, which gives each request its TLS and
 * auth settings, and its proxy, if any: proxy-tunnel.ts): create an Event about the Node, merge-patch
 * the Node's annotations, strategic-merge-patch its `WinfleetReady`
 * condition through `nodes/status`. The Node authorizer and NodeRestriction let
 * a node do exactly these to its own Node object: `create` on `events`,
 * `patch` on `nodes` and `nodes/status` for its own name.
 */
import { readFile } from "node:fs/promises";
import * as http from "node:http";
import * as https from "node:https";
import { type Socket, isIP } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { ExecCredentials, type ExecRunner } from "./exec-credential";
import { credentialsFor, execClusterInfo, loadKubeconfig } from "./kubeconfig";
import { type ProxyTarget, bareHost, dialProxy, portOf, proxyAuthorization, tunnelTo } from "./proxy-tunnel";

/** A failed request: `status` is the HTTP status, undefined when the API server could not be reached. */
export class NodeApiError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
  ) {
    super(message);
    this.name = "NodeApiError";
  }

  /** Whether trying again later can help (unreachable, timeouts, throttling, server errors). */
  get retryable(): boolean {
    return this.status === undefined || this.status === 408 || this.status === 429 || this.status >= 500;
  }
}

/** What the reporter sends. */
export interface NodeApi {
  /** Creates the Event; "exists" when one of that name already does (a resend whose answer was lost). */
  createEvent(namespace: string, event: Record<string, unknown>): Promise<"created" | "exists">;
  /** Merge-patches the Node (its annotations). */
  patchNode(name: string, patch: Record<string, unknown>): Promise<void>;
  /** Strategic-merge-patches the Node's status (its conditions, merged by type). */
  patchNodeStatus(name: string, patch: Record<string, unknown>): Promise<void>;
  /** Any other request (the drain's), answered with its status and body; only an unreachable server throws. */
  request(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }>;
}

/**
 * The most of a response body the agent reads. It sends patches and Events, so
 * an answer is one Node or Event object; a Node with a long image list is well
 * under a MiB, and only an error's first few hundred characters are ever shown.
 */
export const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/**
 * One request, bounded in time and size: the whole exchange (connect, headers,
 * body) must end within `timeoutMs` — an idle timer alone lets a server that
 * trickles a byte at a time hold a request for ever — and a body over `limit`
 * bytes (declared or sent) ends it. Every failure is a rejected NodeApiError;
 * none escapes as an exception.
 */
function send(
  url: URL,
  options: https.RequestOptions,
  data: string,
  bounds: { method: string; timeoutMs: number; limit: number },
): Promise<{ status: number; text: string }> {
  const { method, timeoutMs, limit } = bounds;
  const what = `${method} ${url.pathname}`;
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      outcome();
    };
    const fail = (message: string, status?: number): void => {
      if (settled) return; // a late "close" after the answer was complete
      settle(() => reject(new NodeApiError(`${what}: ${message}`, status)));
      req.destroy();
    };
    const req = (url.protocol === "https:" ? https : http).request(url, options, (res) => {
      const status = res.statusCode ?? 0;
      const declared = Number(res.headers["content-length"] ?? "0");
      // Unretryable would leave a report stuck; a server this broken may recover, so no status is kept.
      if (declared > limit)
        return fail(`the answer (HTTP ${status}) declares ${declared} bytes, over the ${limit}-byte limit`);
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > limit) fail(`the answer (HTTP ${status}) is over the ${limit}-byte limit`);
        else chunks.push(c);
      });
      res.on("end", () => settle(() => resolve({ status, text: Buffer.concat(chunks).toString("utf8") })));
      res.on("error", (e) => fail(e.message));
      res.on("close", () => fail("the connection closed before the answer was complete"));
    });
    const deadline = setTimeout(() => fail(`no complete answer within ${timeoutMs} ms`), timeoutMs);
    req.on("timeout", () => fail(`no answer within ${timeoutMs} ms`));
    req.on("error", (e) => fail(e.message));
    req.end(data);
  });
}

/** The API through the kubeconfig at `file` (kubeconfig.ts says what of it is supported). */
export async function nodeApiFromKubeconfig(file: string, timeoutMs: number, run?: ExecRunner): Promise<NodeApi> {
  const kc = loadKubeconfig(file, await readFile(file, "utf8"));
  const exec =
    kc.exec && new ExecCredentials(kc.exec, { cluster: execClusterInfo(kc), timeoutMs, ...(run ? { run } : {}) });
  // The server may carry a path (a proxy in front of the API server, as Rancher's); requests go under it.
  const base = kc.server.pathname.replace(/\/+$/, "");

  const once = async (
    method: string,
    path: string,
    contentType: string,
    data: string,
  ): Promise<{ status: number; text: string }> => {
    const url = new URL(kc.server);
    const query = path.indexOf("?");
    url.pathname = `${base}${query < 0 ? path : path.slice(0, query)}`;
    url.search = query < 0 ? "" : path.slice(query);
    const c = credentialsFor(kc, exec && (await exec.get()));
    const headers = { ...c.headers, "content-type": contentType, accept: "application/json" };
    const tls: ServerTls = {
      ...(c.ca ? { ca: c.ca } : {}),
      ...(c.cert ? { cert: c.cert, key: c.key } : {}),
      ...(c.servername ? { servername: c.servername } : {}),
      rejectUnauthorized: c.rejectUnauthorized,
    };
    const options: https.RequestOptions = kc.proxy
      ? proxied(url, kc.proxy, tls, { method, headers, timeout: timeoutMs }, timeoutMs)
      : { method, headers, timeout: timeoutMs, ...tls };
    return send(url, options, data, { method, timeoutMs, limit: MAX_RESPONSE_BYTES });
  };
  const request = async (
    method: string,
    path: string,
    contentType: string,
    body: unknown,
  ): Promise<{ status: number; text: string }> => {
    const data = body === undefined ? "" : JSON.stringify(body);
    const r = await once(method, path, contentType, data);
    if (r.status !== 401 || !exec) return r;
    // client-go runs the plugin again when its credential is refused: it may have been revoked or rotated early.
    exec.invalidate();
    return once(method, path, contentType, data);
  };
  const expect = async (
    method: string,
    path: string,
    contentType: string,
    body: unknown,
    ok: (status: number) => boolean,
  ): Promise<number> => {
    const r = await request(method, path, contentType, body);
    if (!ok(r.status)) throw new NodeApiError(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`, r.status);
    return r.status;
  };
  const enc = encodeURIComponent;
  return {
    createEvent: async (namespace, event) =>
      (await expect(
        "POST",
        `/api/v1/namespaces/${enc(namespace)}/events`,
        "application/json",
        event,
        (s) => (s >= 200 && s < 300) || s === 409,
      )) === 409
        ? "exists"
        : "created",
    patchNode: async (name, patch) =>
      void (await expect(
        "PATCH",
        `/api/v1/nodes/${enc(name)}`,
        "application/merge-patch+json",
        patch,
        (s) => s >= 200 && s < 300,
      )),
    request: (method, path, body) =>
      request(method, path, method === "PATCH" ? "application/merge-patch+json" : "application/json", body),
    patchNodeStatus: async (name, patch) =>
      void (await expect(
        "PATCH",
        `/api/v1/nodes/${enc(name)}/status`,
        "application/strategic-merge-patch+json",
        patch,
        (s) => s >= 200 && s < 300,
      )),
  };
}

/** How the API server's TLS is checked and what the node shows it, from the kubeconfig. */
export type ServerTls = Pick<https.RequestOptions, "ca" | "cert" | "key" | "servername"> & {
  readonly rejectUnauthorized: boolean;
};

/**
 * Request options that send a request for `url` through `proxy`: an http
 * server behind an HTTP proxy is asked for in absolute form on a connection to
 * the proxy; anything else goes through a tunnel, with TLS to an https server
 * run inside it and verified as without a proxy.
 */
export function proxied(
  url: URL,
  proxy: URL,
  tls: ServerTls,
  base: https.RequestOptions,
  timeoutMs: number,
): https.RequestOptions {
  // The proxy's own TLS (https proxies) trusts what the cluster trusts, as client-go's transport does.
  const target: ProxyTarget = {
    proxy,
    tls: { ...(tls.ca ? { ca: tls.ca } : {}), rejectUnauthorized: tls.rejectUnauthorized },
    timeoutMs,
  };
  // A connection handed to the callback once it is open, as http.Agent#createConnection may;
  // @types/node declares only the form that returns a socket at once.
  const connectVia = (open: () => Promise<Socket>): NonNullable<https.RequestOptions["createConnection"]> =>
    ((_: unknown, done: (e: Error | null, socket?: Socket) => void) => {
      open().then(
        (s) => done(null, s),
        (e: Error) => done(e),
      );
      return undefined;
    }) as unknown as NonNullable<https.RequestOptions["createConnection"]>;
  if (url.protocol === "http:" && proxy.protocol !== "socks5:") {
    const auth = proxyAuthorization(proxy);
    return {
      ...base,
      host: bareHost(proxy),
      port: portOf(proxy),
      path: url.href,
      headers: { ...base.headers, host: url.host, ...(auth ? { "proxy-authorization": auth } : {}) },
      createConnection: connectVia(() => dialProxy(target)),
    };
  }
  if (url.protocol === "http:") return { ...base, createConnection: connectVia(() => tunnelTo(url, target)) };
  const host = bareHost(url);
  return {
    ...base,
    createConnection: connectVia(async () =>
      tlsConnect({
        socket: await tunnelTo(url, target),
        // The name checked against the server's certificate: tls-server-name, else the server's host,
        // which https.Agent would also send as SNI; SNI is never an address.
        host,
        ...tls,
        ...(tls.servername !== undefined || isIP(host) !== 0 ? {} : { servername: host }),
      }),
    ),
  };
}
