/**
 * The part of a kubelet's HTTPS API the API server uses for `kubectl logs` (the `pods/log`
 * subresource): `GET /containerLogs/{namespace}/{pod}/{container}` with `follow`, `tailLines`,
 * `limitBytes`, `timestamps`, `sinceSeconds` and `sinceTime` (`previous` finds none), served from the container log
 * files the pod runner writes.
 *
 * As a kubelet with `serverTLSBootstrap` and webhook authentication and authorization: its
 * serving certificate comes from a `kubernetes.io/kubelet-serving` CSR made with the node's own
 * credential (an administrator approves it, the controllers sign it, so an API server started with
 * `--kubelet-certificate-authority` verifies it); a client must present a certificate of the
 * cluster CA, and what it may do is asked of the API server with a SubjectAccessReview (`get` on
 * `nodes/proxy` of this node, as a kubelet asks for `/containerLogs`). Nothing else of the
 * kubelet API is served: `exec`, `attach`, `portForward` and `run` answer 501.
 */
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { type LogQuery, readContainerLog } from "./container-log";
import type { KubeClient } from "./kube-client";
import type { ContainerLogRef } from "./pod-model";
import { ecKeyAndCsr } from "./pki";

/** Where the API finds logs: the node's pod runner. */
export interface LogSource {
  containerLog(namespace: string, pod: string, container: string): ContainerLogRef | undefined;
  containersOf(namespace: string, pod: string): string[] | undefined;
}

/** Options for {@link startKubeletApi}. */
export interface KubeletApiOptions {
  /** The node's own client (its credential makes the CSR and the access reviews). */
  readonly api: KubeClient;
  readonly nodeName: string;
  /** The address the node advertises (its InternalIP), in the serving certificate. */
  readonly address: string;
  /** The cluster CA: clients' certificates must chain to it. */
  readonly caPem: string;
  /** Where the serving key and certificate are kept (0600). */
  readonly dir: string;
  /** Late-bound: the pods start running after the node has joined. */
  readonly logs: () => LogSource | undefined;
  /** Approves the serving CSR, as an administrator (or an approver) does for kubelet-serving. */
  readonly approve: (csrName: string) => Promise<void>;
  /** @default 60_000 */
  readonly signTimeoutMs?: number;
}

/** A running kubelet API. */
export interface KubeletApi {
  readonly port: number;
  close(): Promise<void>;
}

/** A serving certificate for the node, through the kubelet-serving signer. */
async function servingCertificate(o: KubeletApiOptions): Promise<{ key: string; cert: string }> {
  const { keyPem: key, csrPem } = await ecKeyAndCsr(
    o.dir,
    "kubelet-serving",
    `/O=system:nodes/CN=system:node:${o.nodeName}`,
    ["-addext", `subjectAltName=IP:${o.address},DNS:${o.nodeName}`],
  );
  const name = `kubelet-serving-${o.nodeName}-${Date.now().toString(36)}`;
  await o.api.post("/apis/certificates.k8s.io/v1/certificatesigningrequests", {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name },
    spec: {
      request: Buffer.from(csrPem).toString("base64"),
      signerName: "kubernetes.io/kubelet-serving",
      usages: ["digital signature", "server auth"],
    },
  });
  await o.approve(name);
  type Csr = { status?: { certificate?: string; conditions?: { type: string; message?: string }[] } };
  const b64 = await o.api.waitFor(
    async () => {
      const csr = await o.api.get<Csr>(`/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`);
      const bad = csr.status?.conditions?.find((c) => c.type === "Denied" || c.type === "Failed");
      if (bad)
        throw new Error(
          `the serving CSR of ${o.nodeName} was ${bad.type.toLowerCase()}: ${bad.message ?? "no reason given"}`,
        );
      return csr.status?.certificate;
    },
    o.signTimeoutMs ?? 60_000,
    `the serving CSR of ${o.nodeName} to be signed`,
  );
  return { key, cert: Buffer.from(b64, "base64").toString() };
}

const fail = (res: ServerResponse, status: number, message: string): void => {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(`${message}\n`);
};

/** The query of a `containerLogs` request; an error message for a bad value. */
function logQuery(params: URLSearchParams): LogQuery | string {
  const flag = (name: string) => ["true", "1"].includes(params.get(name) ?? "");
  const int = (name: string, min: number): number | string | undefined => {
    const v = params.get(name);
    if (v === null) return undefined;
    return /^\d+$/.test(v) && Number(v) >= min ? Number(v) : `${name}=${v}: expected a whole number of at least ${min}`;
  };
  const tailLines = int("tailLines", 0);
  const limitBytes = int("limitBytes", 1);
  const sinceSeconds = int("sinceSeconds", 1);
  if (typeof tailLines === "string") return tailLines;
  if (typeof limitBytes === "string") return limitBytes;
  if (typeof sinceSeconds === "string") return sinceSeconds;
  const sinceTime = params.get("sinceTime");
  if (sinceTime !== null && Number.isNaN(Date.parse(sinceTime)))
    return `sinceTime=${sinceTime}: expected an RFC 3339 time`;
  const since =
    sinceTime !== null
      ? new Date(sinceTime)
      : sinceSeconds !== undefined
        ? new Date(Date.now() - sinceSeconds * 1000)
        : undefined;
  return {
    follow: flag("follow"),
    timestamps: flag("timestamps"),
    ...(tailLines !== undefined ? { tailLines } : {}),
    ...(limitBytes !== undefined ? { limitBytes } : {}),
    ...(since ? { since } : {}),
  };
}

/** Starts the API on a free port of `address`. */
export async function startKubeletApi(o: KubeletApiOptions): Promise<KubeletApi> {
  const tls = await servingCertificate(o);
  const server: Server = createServer(
    { ...tls, ca: o.caPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      void handle(o, req, res).catch((e: unknown) => {
        if (!res.headersSent) fail(res, 500, String(e));
        else res.destroy();
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, o.address, () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(o: KubeletApiOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "https://kubelet");
  const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  if (url.pathname === "/healthz") return void res.writeHead(200).end("ok");
  const peer = (req.socket as TLSSocket).getPeerCertificate();
  const user = peer.subject?.CN ?? "";
  const o_ = peer.subject?.O;
  const groups = Array.isArray(o_) ? o_ : o_ ? [o_] : [];
  const allowed = await o.api.allowed(String(user), groups.map(String), {
    verb: req.method === "GET" ? "get" : "create",
    resource: "nodes",
    subresource: "proxy",
    name: o.nodeName,
  });
  if (!allowed) return fail(res, 403, `Forbidden (user=${String(user)}, verb=get, resource=nodes, subresource=proxy)`);
  if (["exec", "attach", "portForward", "run"].includes(parts[0] ?? ""))
    return fail(res, 501, `${parts[0]} is not served by the winfleet node stand-in: only containerLogs is`);
  if (parts[0] !== "containerLogs" || parts.length !== 4) return fail(res, 404, "404 page not found");
  if (req.method !== "GET") return fail(res, 405, "method not allowed");
  const [, namespace = "", pod = "", container = ""] = parts;
  const query = logQuery(url.searchParams);
  if (typeof query === "string") return fail(res, 400, query);
  // Containers here are never restarted, so there is never a previous one.
  if (["true", "1"].includes(url.searchParams.get("previous") ?? ""))
    return fail(res, 400, `previous terminated container "${container}" in pod "${pod}" not found`);
  const source = o.logs();
  const containers = source?.containersOf(namespace, pod);
  if (!source || !containers) return fail(res, 404, `pod "${pod}" does not exist`);
  if (!containers.includes(container)) return fail(res, 404, `container "${container}" not found in pod "${pod}"`);
  const log = source.containerLog(namespace, pod, container);
  if (!log) return fail(res, 400, `container "${container}" in pod "${pod}" is waiting to start: ContainerCreating`);
  res.writeHead(200, { "content-type": "text/plain", "transfer-encoding": "chunked" });
  const gone = new AbortController();
  res.once("close", () => gone.abort());
  const write = (text: string) =>
    new Promise<boolean>((resolve) => {
      if (gone.signal.aborted) return resolve(false);
      if (res.write(text)) return resolve(true);
      const onDrain = () => {
        res.off("close", onClose);
        resolve(true);
      };
      const onClose = () => {
        res.off("drain", onDrain);
        resolve(false);
      };
      res.once("drain", onDrain);
      res.once("close", onClose);
    });
  await readContainerLog(log.file, query, () => log.running(), write, gone.signal);
  res.end();
}
