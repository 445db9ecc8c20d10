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
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<T>((resolve, reject) => {
      const req = request(
        `${this.server}${path}`,
        {
          method,
          ca: this.creds.ca,
          ...(this.creds.cert ? { cert: this.creds.cert, key: this.creds.key } : {}),
          headers: {
            accept: "application/json",
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
              resolve((text ? JSON.parse(text) : undefined) as T);
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
   * Lists `path` (a collection, with any query) and then watches it, calling `onEvent` for every
   * object listed (`ADDED`) and every change after, in the API server's order, from the moment
   * it is called until `stop`. A watch that ends (the API server restarted) starts again from
   * the last version seen; one that version is too old for is listed afresh.
   */
  watch(
    path: string,
    onEvent: (type: string, object: Record<string, unknown>) => void,
  ): { readonly ready: Promise<void>; stop(): void } {
    let stopped = false;
    let req: ReturnType<typeof request> | undefined;
    let version = "";
    const sep = path.includes("?") ? "&" : "?";
    const relist = async (): Promise<void> => {
      const list = await this.get<{ metadata: { resourceVersion: string }; items: Record<string, unknown>[] }>(path);
      version = list.metadata.resourceVersion;
      for (const item of list.items) onEvent("ADDED", item);
    };
    let generation = 0;
    const follow = (): void => {
      if (stopped) return;
      const mine = ++generation;
      let buffer = "";
      let gone = false;
      // Only the latest connection's end starts another (a response's "end" and "error" both fire).
      const again = (relistFirst: boolean): void => {
        if (mine === generation) restart(relistFirst);
      };
      req = request(
        `${this.server}${path}${sep}watch=true&allowWatchBookmarks=true&resourceVersion=${version}`,
        {
          ca: this.creds.ca,
          ...(this.creds.cert ? { cert: this.creds.cert, key: this.creds.key } : {}),
          headers: {
            accept: "application/json",
            ...(this.creds.token ? { authorization: `Bearer ${this.creds.token}` } : {}),
          },
        },
        (res) => {
          res.on("data", (c: Buffer) => {
            buffer += c.toString();
            let nl: number;
            while ((nl = buffer.indexOf("\n")) >= 0) {
              const line = buffer.slice(0, nl);
              buffer = buffer.slice(nl + 1);
              if (line.trim() === "") continue;
              const e = JSON.parse(line) as { type: string; object: Record<string, unknown> };
              if (e.type === "ERROR") gone = true;
              const meta = e.object.metadata as { resourceVersion?: string } | undefined;
              if (meta?.resourceVersion) version = meta.resourceVersion;
              if (e.type !== "BOOKMARK" && e.type !== "ERROR") onEvent(e.type, e.object);
            }
          });
          res.on("end", () => again(gone));
          res.on("error", () => again(gone));
        },
      );
      req.on("error", () => again(false));
      req.end();
    };
    const restart = (relistFirst: boolean): void => {
      if (stopped) return;
      generation++;
      setTimeout(() => {
        if (relistFirst) relist().then(follow, () => restart(true));
        else follow();
      }, 250).unref();
    };
    const ready = relist().then(follow);
    return {
      ready,
      stop: () => {
        stopped = true;
        req?.destroy();
      },
    };
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
