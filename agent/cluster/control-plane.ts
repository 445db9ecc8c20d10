/**
 * A throwaway Kubernetes control plane on loopback: etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler, the real binaries set-up builds, with a PKI made per run. The API
 * server authorizes as a production cluster does (`Node,RBAC`, the `NodeRestriction` admission
 * plugin, bootstrap-token authentication), and the controller manager runs the controllers a
 * Windows node's life depends on: DaemonSet rollouts, TLS bootstrap (CSR approving and signing,
 * the token cleaner), service-account tokens, namespace deletion and garbage collection, and the
 * workloads drained off a node before an upgrade disrupts it (Deployments, ReplicaSets, and the
 * disruption controller behind PodDisruptionBudgets); the scheduler binds their pods to nodes.
 *
 * Nothing it serves is open to another local user: etcd speaks TLS only, to clients and peers
 * holding a certificate of its own CA (the API server's), not the cluster's; the API server admits
 * no anonymous request but a read of the public cluster-info ConfigMap (kubeadm's discovery); the
 * controller manager and scheduler serve nothing. The state directory
 * (PKI, kubeconfigs, etcd's data) is private to its owner. Each component that exits unasked (a
 * crash, a `kill -9`) is started again on the same ports and data, as a kubelet restarts a static
 * pod, so faults in the middle of a rollout can be tested against it.
 *
 * Used by the end-to-end tests and by `winfleet local up --cluster`.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlanePki, clientKubeconfig, makeControlPlanePki } from "./pki";
import { Supervised, installExitHook, logTail } from "./supervised";

/** The binaries a control plane runs (see `findEngines` for the ones set-up builds). */
export interface ControlPlaneBinaries {
  readonly etcd: string;
  readonly kubeApiserver: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
}

/** Options for {@link startControlPlane}. */
export interface ControlPlaneOptions {
  readonly binaries: ControlPlaneBinaries;
  /** Where its state lives; a new temporary directory when absent (removed by `stop`). */
  readonly dir?: string;
  /** How long to wait for the API server to be ready. @default 60_000 */
  readonly readyTimeoutMs?: number;
  /** Progress lines (e.g. "etcd ready"). */
  readonly log?: (line: string) => void;
}

/** A running control plane. */
export interface ControlPlane {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  readonly dir: string;
  readonly pki: ControlPlanePki;
  /** A cluster-admin kubeconfig (system:masters), written in `dir`. */
  readonly adminKubeconfig: string;
  /** The cluster CA in PEM. */
  readonly caPem: string;
  /** `sha256:<hex>` of the CA's public key, as `kubeadm join --discovery-token-ca-cert-hash` takes it. */
  readonly caCertHash: string;
  /** Stops every process (the API server may be restarted with `restartApiServer`) and, unless kept, removes `dir`. */
  stop(options?: { keepDir?: boolean }): Promise<void>;
  /** Stops the API server alone (etcd and the controllers keep running). */
  stopApiServer(): Promise<void>;
  /** Starts the API server again on the same port, and waits until it is ready. */
  startApiServer(): Promise<void>;
  /** A component's process id now (each is started again when it exits unasked). */
  pid(name: ControlPlaneComponent): number | undefined;
  /** How often a component was started again after an exit nobody asked for. */
  restarts(name: ControlPlaneComponent): number;
}

/** The processes of a control plane. */
export type ControlPlaneComponent = "etcd" | "kube-apiserver" | "kube-controller-manager" | "kube-scheduler";

/**
 * How long a Node may go without renewing its Lease before the node lifecycle controller marks it NotReady
 * (`--node-monitor-grace-period`). Kubernetes' default is 50 s; a throwaway cluster notices a lost host sooner, still
 * three of a kubelet's 10 s renewals.
 */
export const NODE_MONITOR_GRACE_SECONDS = 30;

/** A free TCP port on 127.0.0.1, as the kernel chooses one. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it is true, the process exits, or the deadline passes. */
async function waitFor(
  what: string,
  child: ChildProcess,
  logDir: string,
  deadline: number,
  check: () => Promise<boolean>,
): Promise<void> {
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${what} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${logTail(logDir, what)}`,
      );
    }
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} was not ready in time:\n${logTail(logDir, what)}`);
    await sleep(250);
  }
}

async function httpOk(url: string, tls?: { ca: string; cert: string; key: string }): Promise<boolean> {
  if (!tls) {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  }
  return new Promise((resolve) => {
    const req = request(url, { ...tls, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

/** `sha256:<hex>` of the DER SubjectPublicKeyInfo of a PEM certificate. */
export async function publicKeyPin(caPem: string): Promise<string> {
  const { X509Certificate, createHash } = await import("node:crypto");
  const spki = new X509Certificate(caPem).publicKey.export({ type: "spki", format: "der" });
  return `sha256:${createHash("sha256").update(spki).digest("hex")}`;
}

/** The API server's authentication config: anonymous requests only for the cluster-info ConfigMap. */
export const ANONYMOUS_CLUSTER_INFO_ONLY = `apiVersion: apiserver.config.k8s.io/v1beta1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
    - path: /api/v1/namespaces/kube-public/configmaps/cluster-info
`;

/**
 * Starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler on free loopback ports and resolves once the
 * API server answers `/readyz`. Each is started again when it exits unasked. On any failure everything started is
 * stopped.
 */
export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  installExitHook();
  const log = options.log ?? (() => undefined);
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), "winfleet-cluster-")));
  const owned = options.dir === undefined;
  const logDir = join(dir, "logs");
  // Private to its owner: keys, kubeconfigs, etcd's data and the servers' logs.
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await mkdir(join(dir, "pki"), { recursive: true, mode: 0o700 });
  await mkdir(logDir, { recursive: true, mode: 0o700 });
  const pki = await makeControlPlanePki(join(dir, "pki"));
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const server = `https://127.0.0.1:${apiPort}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  const tls = {
    ca: readFileSync(pki.caCert, "utf8"),
    cert: readFileSync(pki.adminCert, "utf8"),
    key: readFileSync(pki.adminKey, "utf8"),
  };
  const etcdTls = {
    ca: readFileSync(pki.etcdCaCert, "utf8"),
    cert: readFileSync(pki.etcdClientCert, "utf8"),
    key: readFileSync(pki.etcdClientKey, "utf8"),
  };

  const etcdUrl = `https://127.0.0.1:${etcdPort}`;
  const peerUrl = `https://127.0.0.1:${peerPort}`;
  // Every request carries a credential (no anonymous reads, not even of /version or /healthz), but one: a joining
  // node reads the public cluster-info ConfigMap before it has any, as kubeadm's discovery does, and pins the CA in it.
  const authenticationConfig = join(dir, "authentication.yaml");
  await writeFile(authenticationConfig, ANONYMOUS_CLUSTER_INFO_ONLY, { mode: 0o600 });
  const apiserverArgs = [
    `--etcd-servers=${etcdUrl}`,
    `--etcd-cafile=${pki.etcdCaCert}`,
    `--etcd-certfile=${pki.etcdClientCert}`,
    `--etcd-keyfile=${pki.etcdClientKey}`,
    `--authentication-config=${authenticationConfig}`,
    "--bind-address=127.0.0.1",
    "--advertise-address=127.0.0.1",
    `--secure-port=${apiPort}`,
    `--tls-cert-file=${pki.serverCert}`,
    `--tls-private-key-file=${pki.serverKey}`,
    `--client-ca-file=${pki.caCert}`,
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    "--service-cluster-ip-range=10.96.0.0/12",
    "--authorization-mode=Node,RBAC",
    "--enable-admission-plugins=NodeRestriction",
    "--enable-bootstrap-token-auth=true",
    // Logs (`pods/log`) through the nodes' kubelet API, both sides verified as kubeadm sets them up.
    `--kubelet-client-certificate=${pki.kubeletClientCert}`,
    `--kubelet-client-key=${pki.kubeletClientKey}`,
    `--kubelet-certificate-authority=${pki.caCert}`,
    "--kubelet-preferred-address-types=InternalIP,Hostname",
    // HostProcess pods are privileged, as kubeadm's API server allows.
    "--allow-privileged=true",
    "--profiling=false",
    "--v=1",
  ];
  const adminKubeconfig = join(dir, "admin.kubeconfig");
  const kcmKubeconfig = join(dir, "controller-manager.kubeconfig");
  const schedulerKubeconfig = join(dir, "scheduler.kubeconfig");
  const supervised = (name: string, binary: string, args: readonly string[]) =>
    new Supervised(name, binary, args, logDir, log);
  const etcd = supervised("etcd", options.binaries.etcd, [
    "--name=winfleet-local",
    `--data-dir=${join(dir, "etcd")}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=winfleet-local=${peerUrl}`,
    // Clients and peers prove themselves with a certificate of etcd's own CA.
    `--cert-file=${pki.etcdServerCert}`,
    `--key-file=${pki.etcdServerKey}`,
    "--client-cert-auth=true",
    `--trusted-ca-file=${pki.etcdCaCert}`,
    `--peer-cert-file=${pki.etcdServerCert}`,
    `--peer-key-file=${pki.etcdServerKey}`,
    "--peer-client-cert-auth=true",
    `--peer-trusted-ca-file=${pki.etcdCaCert}`,
    // A throwaway cluster: losing it on power loss is fine, waiting on fsync is not.
    "--unsafe-no-fsync=true",
    "--log-level=warn",
  ]);
  const apiserver = supervised("kube-apiserver", options.binaries.kubeApiserver, apiserverArgs);
  const controllers = supervised("kube-controller-manager", options.binaries.kubeControllerManager, [
    `--kubeconfig=${kcmKubeconfig}`,
    `--authentication-kubeconfig=${kcmKubeconfig}`,
    `--authorization-kubeconfig=${kcmKubeconfig}`,
    // The disruption controller keeps PodDisruptionBudgets' status, which the eviction subresource enforces
    // (without it every eviction a budget covers is refused); deployment and replicaset run workloads, and
    // nodelifecycle lifts the not-ready taint a Node registers with once it is Ready (only DaemonSet pods
    // tolerate it), taints a cordoned one, and turns a Node whose Lease is not renewed within the grace period
    // NotReady (Unknown) with its pods unready, as on any cluster.
    "--controllers=daemonset,deployment,replicaset,disruption,nodelifecycle,podgc,csrapproving,csrsigning,csrcleaner,tokencleaner,bootstrapsigner,serviceaccount,serviceaccount-token,namespace,garbagecollector",
    `--node-monitor-grace-period=${NODE_MONITOR_GRACE_SECONDS}s`,
    `--cluster-signing-cert-file=${pki.caCert}`,
    `--cluster-signing-key-file=${pki.caKey}`,
    `--root-ca-file=${pki.caCert}`,
    `--service-account-private-key-file=${pki.serviceAccountKey}`,
    "--use-service-account-credentials=true",
    "--leader-elect=false",
    "--bind-address=127.0.0.1",
    "--secure-port=0",
    "--v=1",
  ]);
  const scheduler = supervised("kube-scheduler", options.binaries.kubeScheduler, [
    `--kubeconfig=${schedulerKubeconfig}`,
    `--authentication-kubeconfig=${schedulerKubeconfig}`,
    `--authorization-kubeconfig=${schedulerKubeconfig}`,
    "--leader-elect=false",
    "--bind-address=127.0.0.1",
    "--secure-port=0",
    "--v=1",
  ]);
  const components = {
    etcd,
    "kube-apiserver": apiserver,
    "kube-controller-manager": controllers,
    "kube-scheduler": scheduler,
  };
  const stopAll = async () => {
    for (const c of [scheduler, controllers, apiserver, etcd]) await c.stop();
  };
  const startApiServer = async () => {
    const child = apiserver.start();
    const until = Math.max(deadline, Date.now() + (options.readyTimeoutMs ?? 60_000));
    await waitFor("kube-apiserver", child, logDir, until, () => httpOk(`${server}/readyz`, tls));
  };

  try {
    await waitFor("etcd", etcd.start(), logDir, deadline, () => httpOk(`${etcdUrl}/health`, etcdTls));
    log(`etcd ready on ${etcdUrl}`);
    await startApiServer();
    log(`kube-apiserver ready on ${server}`);

    await writeFile(
      adminKubeconfig,
      await clientKubeconfig(server, pki.caCert, pki.adminCert, pki.adminKey, "kubernetes-admin"),
      { mode: 0o600 },
    );
    await writeFile(
      kcmKubeconfig,
      await clientKubeconfig(
        server,
        pki.caCert,
        pki.controllerManagerCert,
        pki.controllerManagerKey,
        "system:kube-controller-manager",
      ),
      { mode: 0o600 },
    );
    await writeFile(
      schedulerKubeconfig,
      await clientKubeconfig(server, pki.caCert, pki.schedulerCert, pki.schedulerKey, "system:kube-scheduler"),
      { mode: 0o600 },
    );
    const started = [controllers.start(), scheduler.start()];
    // Neither serves anything here; each is running once it has not died at start.
    await sleep(500);
    for (const [i, name] of ["kube-controller-manager", "kube-scheduler"].entries()) {
      if (started[i]?.exitCode !== null) throw new Error(`${name} exited at start:\n${logTail(logDir, name)}`);
    }
    log("kube-controller-manager and kube-scheduler started");

    const caPem = readFileSync(pki.caCert, "utf8");
    return {
      server,
      dir,
      pki,
      adminKubeconfig,
      caPem,
      caCertHash: await publicKeyPin(caPem),
      stopApiServer: () => apiserver.stop(),
      startApiServer,
      pid: (name) => components[name].child?.pid,
      restarts: (name) => components[name].restarts,
      async stop(stopOptions) {
        await stopAll();
        if (owned && !stopOptions?.keepDir) await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await stopAll();
    if (owned) await rm(dir, { recursive: true, force: true });
    throw e;
  }
}
