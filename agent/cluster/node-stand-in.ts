/**
 * What a kubelet does for its Node, for a sandbox host that has no kubelet: it joins as a
 * Windows node does (TLS bootstrap: a client CSR made with the bootstrap token, approved and
 * signed by the cluster's controllers, then the node's own credential), registers its Node with
 * the labels a kubelet sets, and keeps it alive — the Ready condition posted and its Lease in
 * `kube-node-lease` renewed — with that credential, under the Node authorizer and
 * NodeRestriction like any kubelet.
 *
 * It advertises the address and port of its kubelet API (kubelet-api.ts: container logs only)
 * when it has one. Pods are run by pod-runner.ts; what is not stood in for is listed in
 * docs/local-fleet.md.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { KubeClient, KubeError } from "./kube-client";
import { ecKeyAndCsr } from "./pki";

/** What a node needs to join: the API server, its CA and a bootstrap token. */
export interface JoinArgs {
  readonly server: string;
  readonly caPem: string;
  /** `<token-id>.<token-secret>` */
  readonly bootstrapToken: string;
  readonly nodeName: string;
  /** Labels the node registers with (a kubelet's `--node-labels`). */
  readonly labels: Readonly<Record<string, string>>;
  /** Where the node's key, certificate and kubeconfig are written (0600). */
  readonly dir: string;
  /** How long to wait for the controllers to sign. @default 60_000 */
  readonly signTimeoutMs?: number;
}

/** A joined node's credential. */
export interface NodeCredential {
  readonly certPem: string;
  readonly keyPem: string;
  /** A kubeconfig with the credential embedded, as a kubelet's kubelet.conf. */
  readonly kubeconfig: string;
}

/**
 * TLS bootstrap: a P-256 key and a CSR for `system:node:<name>` in `system:nodes`, created with
 * the bootstrap token under the kubelet's signer, then the certificate the controllers issue.
 * @throws when the CSR is denied or not signed in time.
 */
export async function tlsBootstrap(args: JoinArgs): Promise<NodeCredential> {
  await mkdir(args.dir, { recursive: true, mode: 0o700 });
  const { keyPem, csrPem } = await ecKeyAndCsr(args.dir, "node", `/O=system:nodes/CN=system:node:${args.nodeName}`);
  const bootstrap = new KubeClient(args.server, { ca: args.caPem, token: args.bootstrapToken });
  // A name per attempt: a CSR cannot be changed once made, and each attempt has a key of its own.
  const name = `node-csr-${args.nodeName}-${Date.now().toString(36)}`;
  await bootstrap.post("/apis/certificates.k8s.io/v1/certificatesigningrequests", {
    apiVersion: "certificates.k8s.io/v1",
    kind: "CertificateSigningRequest",
    metadata: { name },
    spec: {
      request: Buffer.from(csrPem).toString("base64"),
      signerName: "kubernetes.io/kube-apiserver-client-kubelet",
      usages: ["digital signature", "client auth"],
    },
  });
  type Csr = { status?: { certificate?: string; conditions?: { type: string; message?: string }[] } };
  const certificate = await bootstrap.waitFor(
    async () => {
      const csr = await bootstrap.get<Csr>(`/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`);
      const denied = csr.status?.conditions?.find((c) => c.type === "Denied" || c.type === "Failed");
      if (denied)
        throw new Error(
          `the CSR of ${args.nodeName} was ${denied.type.toLowerCase()}: ${denied.message ?? "no reason given"}`,
        );
      return csr.status?.certificate;
    },
    args.signTimeoutMs ?? 60_000,
    `the CSR of ${args.nodeName} to be approved and signed (are the csrapproving and csrsigning controllers running?)`,
  );
  const certPem = Buffer.from(certificate, "base64").toString();
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const kubeconfig = join(args.dir, "kubelet.conf");
  await writeFile(
    kubeconfig,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      "- name: default-cluster",
      `  cluster: { server: "${args.server}", certificate-authority-data: ${b64(args.caPem)} }`,
      "users:",
      "- name: default-auth",
      `  user: { client-certificate-data: ${b64(certPem)}, client-key-data: ${b64(keyPem)} }`,
      "contexts:",
      "- name: default-context",
      "  context: { cluster: default-cluster, user: default-auth }",
      "current-context: default-context",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  return { certPem, keyPem, kubeconfig };
}

/** Options for {@link NodeStandIn}. */
export interface NodeStandInOptions {
  readonly server: string;
  readonly caPem: string;
  readonly credential: NodeCredential;
  readonly nodeName: string;
  readonly labels: Readonly<Record<string, string>>;
  /** How often the Lease is renewed and the Ready condition posted. @default 10_000 (a kubelet's) */
  readonly heartbeatMs?: number;
  /** The port of the node's kubelet API (`status.daemonEndpoints.kubeletEndpoint`), when it serves one. */
  readonly kubeletPort?: number;
  /** The node's InternalIP. @default "127.0.0.1" */
  readonly address?: string;
  /** Heartbeat failures (the API server away); the stand-in keeps trying. */
  readonly onError?: (e: unknown) => void;
  /** A heartbeat that succeeded again after failures. */
  readonly onRecovered?: () => void;
  /**
   * Whether the host is running. The stand-in runs beside its host rather than on it, so it asks: a host whose
   * processes are stopped renews nothing, as the kubelet of a machine that froze would not. @default always
   */
  readonly hostRunning?: () => boolean;
}

const LEASE_SECONDS = 40;
/** A kubelet's `nodeStatusReportFrequency`: an unchanged status is posted this often. */
const STATUS_REPORT_MS = 5 * 60_000;

/** A registered Node kept alive with the node's own credential. */
export class NodeStandIn {
  private readonly api: KubeClient;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> = Promise.resolve();
  /** When the node last turned Ready: a condition's transition time moves only when its status does. */
  private readySince = "";
  /** Whether this stand-in posted the Node's status since it started (its kubelet port, say, is new). */
  private posted = false;

  constructor(private readonly options: NodeStandInOptions) {
    this.api = new KubeClient(options.server, {
      ca: options.caPem,
      cert: options.credential.certPem,
      key: options.credential.keyPem,
    });
  }

  /** The client acting as this node (what NodeRestriction sees). */
  get client(): KubeClient {
    return this.api;
  }

  /** Registers the Node (or adopts the one of this name), posts it Ready, and starts the heartbeat. */
  async start(): Promise<void> {
    await this.register();
    await this.heartbeat();
    const every = this.options.heartbeatMs ?? 10_000;
    let failing = false;
    this.timer = setInterval(() => {
      if (this.options.hostRunning?.() === false) return;
      this.beating = this.heartbeat().then(
        () => {
          if (failing) this.options.onRecovered?.();
          failing = false;
        },
        (e: unknown) => {
          // One line per outage, not one per host every 10 s.
          if (!failing) this.options.onError?.(e);
          failing = true;
        },
      );
    }, every);
    this.timer.unref();
  }

  /** Stops the heartbeat; the Node goes NotReady when the node controller notices, as when a kubelet stops. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.beating;
  }

  private async register(): Promise<void> {
    const { nodeName, labels } = this.options;
    try {
      await this.api.post("/api/v1/nodes", {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: nodeName, labels: { "kubernetes.io/hostname": nodeName, ...labels } },
      });
    } catch (e) {
      if (!(e instanceof KubeError && e.status === 409)) throw e;
    }
  }

  /**
   * What a kubelet does every 10 s: renew the Lease, and post the Node's status only when it differs from what the
   * API server holds (the node lifecycle controller marked it NotReady, say) or every five minutes
   * (`nodeStatusReportFrequency`), reading the Node from the API server's cache to know.
   */
  private async heartbeat(): Promise<void> {
    const { nodeName } = this.options;
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    type NodeStatus = { status?: { conditions?: { type: string; status: string; lastHeartbeatTime?: string }[] } };
    // Its first status is posted unread: the cache may not hold a Node registered a moment ago.
    let node: NodeStatus | undefined;
    if (this.posted) {
      node = await this.api.getOrUndefined<NodeStatus>(`/api/v1/nodes/${nodeName}?resourceVersion=0`);
      // Deleted while the node runs: register it again, as a kubelet restarted would.
      if (!node) await this.register();
    }
    const ready = node?.status?.conditions?.find((c) => c.type === "Ready");
    const age = ready?.lastHeartbeatTime ? Date.now() - Date.parse(ready.lastHeartbeatTime) : Infinity;
    if (ready?.status !== "True") this.readySince = now;
    if (ready?.status !== "True" || !(age < STATUS_REPORT_MS) || !this.posted) await this.postStatus(now);
    await this.renewLease();
  }

  private async postStatus(now: string): Promise<void> {
    const { nodeName } = this.options;
    this.readySince ||= now;
    await this.api.patch(
      `/api/v1/nodes/${nodeName}/status`,
      {
        status: {
          conditions: [
            {
              type: "Ready",
              status: "True",
              reason: "KubeletReady",
              message: "winfleet node stand-in is posting ready status",
              lastHeartbeatTime: now,
              lastTransitionTime: this.readySince,
            },
          ],
          // Where the API server reaches this node's kubelet API (`--kubelet-preferred-address-types`).
          addresses: [
            { type: "InternalIP", address: this.options.address ?? "127.0.0.1" },
            { type: "Hostname", address: nodeName },
          ],
          ...(this.options.kubeletPort
            ? { daemonEndpoints: { kubeletEndpoint: { Port: this.options.kubeletPort } } }
            : {}),
          capacity: { cpu: "2", memory: "4Gi", pods: "110" },
          allocatable: { cpu: "2", memory: "4Gi", pods: "110" },
          nodeInfo: {
            machineID: nodeName,
            systemUUID: nodeName,
            bootID: nodeName,
            kernelVersion: "",
            osImage: "winfleet sandbox host",
            containerRuntimeVersion: "winfleet://host-process",
            kubeletVersion: "v1.34.4",
            kubeProxyVersion: "",
            operatingSystem: "windows",
            architecture: "amd64",
          },
        },
      },
      "strategic",
    );
    this.posted = true;
  }

  private async renewLease(): Promise<void> {
    const { nodeName } = this.options;
    const micro = new Date().toISOString().replace(/Z$/, "000Z");
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`;
    const spec = { holderIdentity: nodeName, leaseDurationSeconds: LEASE_SECONDS, renewTime: micro };
    try {
      await this.api.patch(leasePath, { spec });
    } catch (e) {
      if (!(e instanceof KubeError && e.status === 404)) throw e;
      await this.api.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: nodeName },
        spec,
      });
    }
  }
}
