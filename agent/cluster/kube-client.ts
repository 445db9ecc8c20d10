/**
 * A small Kubernetes REST client for the local cluster and its tests: client-certificate or
 * bearer-token authentication, JSON in and out, bounded responses and deadlines, and a bounded
 * poll. The node agent's own reporting goes through agent/report, which reads real kubeconfigs.
 */
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { parse } from "yaml";

/** No answer the local cluster gives is larger; a longer one is refused, not buffered. */
const MAX_RESPONSE = 64 * 1024 * 1024;

/** An API error: the status code and the server's Status message. */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

interface Credentials {
  readonly ca: string;
  readonly cert?: string;
  readonly key?: string;
  readonly token?: string;
}

/** One identity's connection to one API server. */
export class KubeClient {
  constructor(
    readonly server: string,
    private readonly creds: Credentials,
  ) {}

  /** From a kubeconfig with embedded data (as the control plane and kubeadm write them). */
  static fromKubeconfigFile(path: string): KubeClient {
    const doc = parse(readFileSync(path, "utf8")) as {
      clusters: { cluster: { server: string; "certificate-authority-data": string } }[];
      users: { user: { "client-certificate-data"?: string; "client-key-data"?: string; token?: string } }[];
    };
    const cluster = doc.clusters[0]?.cluster;
    const user = doc.users[0]?.user;
    if (!cluster || !user) throw new Error(`${path}: no cluster or user`);
    const b64 = (s?: string) => (s ? Buffer.from(s, "base64").toString() : undefined);
    const cert = b64(user["client-certificate-data"]);
    const key = b64(user["client-key-data"]);
    return new KubeClient(cluster.server, {
      ca: b64(cluster["certificate-authority-data"]) ?? "",
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
      ...(user.token ? { token: user.token } : {}),
    });
  }

  /** The same server as another identity. */
  as(creds: Omit<Credentials, "ca">): KubeClient {
    return new KubeClient(this.server, { ca: this.creds.ca, ...creds });
  }

  async call<T>(method: string, path: string, body?: unknown, contentType = "application/json"): Promise<T> {
    const text = await this.raw(method, path, body, contentType);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** A GET answered in text, such as the API server's `/metrics`. */
  text(path: string): Promise<string> {
    return this.raw("GET", path, undefined, "application/json", "text/plain");
  }

  private async raw(
    method: string,
    path: string,
    body: unknown,
    contentType: string,
    accept = "application/json",
  ): Promise<string> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<string>((resolve, reject) => {
      const req = request(
        `${this.server}${path}`,
        {
          method,
          ca: this.creds.ca,
          ...(this.creds.cert ? { cert: this.creds.cert, key: this.creds.key } : {}),
          headers: {
            accept,
            ...(payload ? { "content-type": contentType, "content-length": payload.length } : {}),
            ...(this.creds.token ? { authorization: `Bearer ${this.creds.token}` } : {}),
          },
          timeout: 15_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on("data", (c: Buffer) => {
            size += c.length;
            if (size > MAX_RESPONSE)
              req.destroy(new Error(`${method} ${path}: response larger than ${MAX_RESPONSE} bytes`));
            else chunks.push(c);
          });
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString();
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              resolve(text);
              return;
            }
            let message = text;
            try {
              message = (JSON.parse(text) as { message?: string }).message ?? text;
            } catch {
              // not a Status object
            }
            reject(new KubeError(status, `${method} ${path}: ${status} ${message}`));
          });
        },
      );
      // An idle timer alone lets a server that trickles bytes hold the request forever.
      const deadline = setTimeout(
        () => req.destroy(new Error(`${method} ${path}: no complete answer in 30 s`)),
        30_000,
      );
      req.on("close", () => clearTimeout(deadline));
      req.on("timeout", () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on("error", reject);
      req.end(payload);
    });
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>("GET", path);
  }

  post<T = unknown>(path: string, body: unknown): Promise<T> {
    return this.call<T>("POST", path, body);
  }

  put<T = unknown>(path: string, body: unknown): Promise<T> {
    return this.call<T>("PUT", path, body);
  }

  patch<T = unknown>(path: string, body: unknown, type: "merge" | "strategic" | "json" = "merge"): Promise<T> {
    const ct = {
      merge: "application/merge-patch+json",
      strategic: "application/strategic-merge-patch+json",
      json: "application/json-patch+json",
    }[type];
    return this.call<T>("PATCH", path, body, ct);
  }

  delete<T = unknown>(path: string): Promise<T> {
    return this.call<T>("DELETE", path);
  }

  /** The object, or undefined on 404. */
  async getOrUndefined<T = unknown>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path);
    } catch (e) {
      if (e instanceof KubeError && e.status === 404) return undefined;
      throw e;
    }
  }

  /** Whether `user` (with `groups`) may do `verb` on `resource`, asked of the real authorizer. */
  async allowed(user: string, groups: readonly string[], attrs: Record<string, string>): Promise<boolean> {
    const review = await this.post<{ status: { allowed: boolean } }>(
      "/apis/authorization.k8s.io/v1/subjectaccessreviews",
      {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: { user, groups: [...groups], resourceAttributes: attrs },
      },
    );
    return review.status.allowed;
  }

  /**
   * Watches the collection at `path` (with its query, e.g. a field selector) from `resourceVersion`, as a kubelet
   * watches its pods: each event is handed to `onEvent` in order. Resolves with the last resource version seen when
   * the server ends the watch (it does after `timeoutSeconds`) or `signal` aborts; rejects when the watch fails,
   * with a KubeError of status 410 when the version is too old and the caller must list again.
   */
  watchOnce<T>(
    path: string,
    resourceVersion: string,
    onEvent: (type: "ADDED" | "MODIFIED" | "DELETED", object: T) => void,
    signal: AbortSignal,
    timeoutSeconds = 300,
  ): Promise<string> {
    const query = `watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=${timeoutSeconds}`;
    let last = resourceVersion;
    return new Promise<string>((resolve, reject) => {
      if (signal.aborted) return resolve(last);
      const req = request(
        `${this.server}${path}${path.includes("?") ? "&" : "?"}${query}`,
        {
          ca: this.creds.ca,
          ...(this.creds.cert ? { cert: this.creds.cert, key: this.creds.key } : {}),
          headers: {
            accept: "application/json",
            ...(this.creds.token ? { authorization: `Bearer ${this.creds.token}` } : {}),
          },
          // The server sends a bookmark at least every minute or so; a silent connection for longer is dead.
          timeout: 120_000,
        },
        (res) => {
          if ((res.statusCode ?? 0) !== 200) {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.length < 64 && chunks.push(c));
            res.on("end", () =>
              reject(
                new KubeError(
                  res.statusCode ?? 0,
                  `WATCH ${path}: ${res.statusCode} ${Buffer.concat(chunks).toString().slice(0, 500)}`,
                ),
              ),
            );
            return;
          }
          let buffer = "";
          res.on("data", (c: Buffer) => {
            buffer += c.toString();
            if (buffer.length > MAX_RESPONSE)
              return req.destroy(new Error(`WATCH ${path}: an event over ${MAX_RESPONSE} bytes`));
            let nl: number;
            while ((nl = buffer.indexOf("\n")) >= 0) {
              const line = buffer.slice(0, nl).trim();
              buffer = buffer.slice(nl + 1);
              if (!line) continue;
              const e = JSON.parse(line) as {
                type: string;
                object: { metadata?: { resourceVersion?: string }; code?: number; message?: string };
              };
              if (e.type === "ERROR") {
                req.destroy();
                return reject(new KubeError(e.object.code ?? 500, `WATCH ${path}: ${e.object.message ?? "error"}`));
              }
              last = e.object.metadata?.resourceVersion ?? last;
              if (e.type === "ADDED" || e.type === "MODIFIED" || e.type === "DELETED") onEvent(e.type, e.object as T);
            }
          });
          res.on("end", () => resolve(last));
          res.on("error", reject);
        },
      );
      const onAbort = () => {
        req.destroy();
        resolve(last);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      req.on("close", () => signal.removeEventListener("abort", onAbort));
      req.on("timeout", () => req.destroy(new Error(`WATCH ${path}: silent for 120 s`)));
      req.on("error", reject);
      req.end();
    });
  }

  /**
   * Lists `path` (a collection, with any query) and then watches it, calling `onEvent` for every
   * object listed (`ADDED`) and every change after, in the API server's order, from the moment
   * it is called until `stop`. A watch that ends (the API server restarted, or its timeout) starts
   * again from the last version seen; one whose version is too old (410) is listed afresh.
   */
  watch(
    path: string,
    onEvent: (type: string, object: Record<string, unknown>) => void,
  ): { readonly ready: Promise<void>; stop(): void } {
    const stop = new AbortController();
    let version = "";
    const relist = async (): Promise<void> => {
      const list = await this.get<{ metadata: { resourceVersion: string }; items: Record<string, unknown>[] }>(path);
      version = list.metadata.resourceVersion;
      for (const item of list.items) onEvent("ADDED", item);
    };
    const follow = async (): Promise<void> => {
      let relistFirst = false;
      while (!stop.signal.aborted) {
        try {
          if (relistFirst) await relist();
          relistFirst = false;
          version = await this.watchOnce<Record<string, unknown>>(path, version, onEvent, stop.signal);
        } catch (e) {
          relistFirst = relistFirst || (e instanceof KubeError && e.status === 410);
          await new Promise((r) => setTimeout(r, 250).unref());
        }
      }
    };
    const ready = relist().then(() => {
      void follow();
    });
    return { ready, stop: () => stop.abort() };
  }

  /** Polls `probe` every 250 ms until it returns a value other than undefined/false, or fails after `timeoutMs`. */
  async waitFor<T>(probe: () => Promise<T | undefined | false>, timeoutMs: number, what = "condition"): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
