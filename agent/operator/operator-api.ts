/**
 * The API as an operator reaches it: the current context of a real kubeconfig, read as kubectl
 * reads it (agent/report/kubeconfig.ts: CA and client certificates from files or data, tokens,
 * exec credential plugins such as kubelogin, impersonation, proxy-url), for JSON requests and
 * for streamed answers (a followed log).
 */
import { readFile } from "node:fs/promises";
import * as http from "node:http";
import * as https from "node:https";
import { KubeError } from "../cluster";
import { ExecCredentials, type ServerTls, credentialsFor, execClusterInfo, loadKubeconfig, proxied } from "../report";

/** No JSON answer this client asks for is larger (a node list of a large cluster is a few MiB). */
const MAX_JSON = 32 * 1024 * 1024;

/** JSON requests and streamed reads against one API server. */
export interface OperatorApi {
  readonly server: string;
  /** A JSON request; a KubeError with the status and the server's message when it is refused. */
  json<T>(method: string, path: string, body?: unknown, contentType?: string): Promise<T>;
  /** Reads a streamed answer, piece by piece, until it ends or `signal` is aborted. */
  stream(path: string, onText: (text: string) => void, signal: AbortSignal): Promise<void>;
}

/** The API through the current context of the kubeconfig at `file`. */
export async function operatorApi(file: string, timeoutMs = 30_000): Promise<OperatorApi> {
  const kc = loadKubeconfig(file, await readFile(file, "utf8"));
  const exec = kc.exec && new ExecCredentials(kc.exec, { cluster: execClusterInfo(kc), timeoutMs });
  const base = kc.server.pathname.replace(/\/+$/, "");

  const open = async (
    method: string,
    path: string,
    headers: Record<string, string | number>,
    timeout: number,
  ): Promise<{ url: URL; options: https.RequestOptions }> => {
    const url = new URL(kc.server);
    const [p, q] = path.split("?");
    url.pathname = `${base}${p ?? ""}`;
    url.search = q ? `?${q}` : "";
    const c = credentialsFor(kc, exec && (await exec.get()));
    const all = { ...c.headers, ...headers };
    const tls: ServerTls = {
      ...(c.ca ? { ca: c.ca } : {}),
      ...(c.cert ? { cert: c.cert, key: c.key } : {}),
      ...(c.servername ? { servername: c.servername } : {}),
      rejectUnauthorized: c.rejectUnauthorized,
    };
    const options = kc.proxy
      ? proxied(url, kc.proxy, tls, { method, headers: all, timeout }, timeout || timeoutMs)
      : { method, headers: all, timeout, ...tls };
    return { url, options };
  };

  /** Sends one request; the response is handed over unread. */
  const send = async (
    method: string,
    path: string,
    headers: Record<string, string | number>,
    payload: Buffer | undefined,
    timeout: number,
    signal?: AbortSignal,
  ): Promise<http.IncomingMessage> => {
    const { url, options } = await open(method, path, headers, timeout);
    return new Promise((resolve, reject) => {
      const req = (url.protocol === "https:" ? https : http).request(
        url,
        { ...options, ...(signal ? { signal } : {}) },
        resolve,
      );
      req.on("timeout", () => req.destroy(new Error(`${method} ${path}: no answer within ${timeout} ms`)));
      req.on("error", (e) => reject(new Error(`${method} ${kc.server.origin}${path}: ${e.message}`)));
      req.end(payload);
    });
  };

  const readAll = (res: http.IncomingMessage, what: string, limit: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > limit) res.destroy(new Error(`${what}: answer over ${limit} bytes`));
        else chunks.push(c);
      });
      res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      res.on("error", reject);
    });

  const refusal = async (res: http.IncomingMessage, what: string): Promise<KubeError> => {
    const text = await readAll(res, what, 64 * 1024).catch(() => "");
    let message = text.trim();
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not a Status object
    }
    return new KubeError(res.statusCode ?? 0, `${what}: ${res.statusCode ?? 0} ${message}`);
  };

  const attempt = async <T>(
    method: string,
    path: string,
    payload: Buffer | undefined,
    contentType: string,
  ): Promise<{ status: number; value?: T; error?: KubeError }> => {
    const what = `${method} ${path}`;
    const headers = {
      accept: "application/json",
      ...(payload ? { "content-type": contentType, "content-length": payload.length } : {}),
    };
    const res = await send(method, path, headers, payload, timeoutMs);
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) return { status, error: await refusal(res, what) };
    const text = await readAll(res, what, MAX_JSON);
    return { status, value: (text ? JSON.parse(text) : undefined) as T };
  };

  return {
    server: kc.server.origin,
    async json<T>(method: string, path: string, body?: unknown, contentType = "application/json"): Promise<T> {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      let r = await attempt<T>(method, path, payload, contentType);
      if (r.status === 401 && exec) {
        // As client-go: a refused plugin credential may have been revoked early; run the plugin again.
        exec.invalidate();
        r = await attempt<T>(method, path, payload, contentType);
      }
      if (r.error) throw r.error;
      return r.value as T;
    },
    async stream(path: string, onText: (text: string) => void, signal: AbortSignal): Promise<void> {
      // No idle timeout: a followed log is silent while the node collects.
      const res = await send("GET", path, { accept: "*/*" }, undefined, 0, signal);
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) throw await refusal(res, `GET ${path}`);
      res.setEncoding("utf8");
      await new Promise<void>((resolve, reject) => {
        res.on("data", (t: string) => onText(t));
        res.on("end", () => resolve());
        res.on("error", reject);
        res.on("close", () => resolve());
      });
    },
  };
}
