/**
 * The local fleet's cluster mode (`winfleet local up --cluster`): the production loop on one
 * machine. A throwaway control plane starts; the stack's real Pulumi program deploys the
 * cluster side to it through the Automation API (the engines set-up built, a file backend under
 * the fleet's state directory); and each sandbox host joins as a Windows node does — TLS
 * bootstrap with the bootstrap token the program derived for that host, its CSR approved by
 * winfleet's node approver (which the fleet runs, as a stack without an approver image runs it
 * itself), then its own credential, which its node stand-in keeps the Node and Lease alive with
 * and its agent reports with.
 */
import { randomInt } from "node:crypto";
import { copyFile, cp as copyTree, mkdir, readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import {
  type ControlPlane,
  startControlPlane,
  findEngines,
  KubeClient,
  type KubeletApi,
  startKubeletApi,
  NodeStandIn,
  tlsBootstrap,
  PodRunner,
  pulumiProject,
  runNodeApprover,
} from "../cluster";
import { AgentError, AgentErrorCode } from "../common";
import { AGENT_VERSION as VERSION } from "../version";
import { POOL_LABEL, STACK_LABEL, stackSlug } from "../../components";
import { daemonSetsSettled } from "./daemonset-rollout";
import { type FleetSpec, hostNames, hostPaths } from "./spec";

/** What the status page shows of the cluster: the Nodes, the upgrader DaemonSets' rollouts and recent Events. */
export interface ClusterView {
  readonly server: string;
  readonly nodes: readonly {
    readonly name: string;
    readonly ready: string;
    readonly winfleetReady: string;
    readonly template: string;
  }[];
  readonly daemonSets: readonly {
    readonly name: string;
    readonly desired: number;
    readonly updated: number;
    readonly ready: number;
    readonly unavailable: number;
  }[];
  readonly events: readonly {
    readonly at: string;
    readonly object: string;
    readonly reason: string;
    readonly message: string;
    readonly type: string;
  }[];
}

/** A running local cluster with the fleet's hosts joined. */
export interface LocalCluster {
  readonly server: string;
  /** A cluster-admin kubeconfig for kubectl (`<state>/kubeconfig`). */
  readonly kubeconfig: string;
  /** Each joined host's own kubeconfig (its kubelet.conf), which its agent reports with. */
  readonly kubeconfigFor: (host: string) => string | undefined;
  /**
   * Starts running the pods bound to each host (the upgraders), once the hosts' agents have
   * their configs: from then on a version rolls through the DaemonSet controller.
   */
  startPods(agentEntry: string): void;
  /**
   * Deploys `spec` (a new template version, new content) to the cluster side with the real
   * engine again: the upgraders' pod templates change and the DaemonSet controller rolls them.
   */
  readonly deploy: (spec: FleetSpec) => Promise<void>;
  /** Resolves once every upgrader DaemonSet has rolled (`daemonSetsSettled`). */
  readonly settled: (signal: AbortSignal) => Promise<void>;
  /** The cluster's view of the fleet, read with the administrator's credential. */
  readonly view: () => Promise<ClusterView>;
  /** Stops the node stand-ins and the control plane. */
  stop(): Promise<void>;
}

type Condition = { type: string; status: string };
type NodeList = {
  items: { metadata: { name: string; annotations?: Record<string, string> }; status?: { conditions?: Condition[] } }[];
};
type DaemonSetList = {
  items: {
    metadata: { name: string };
    status?: {
      desiredNumberScheduled?: number;
      updatedNumberScheduled?: number;
      numberReady?: number;
      numberUnavailable?: number;
    };
  }[];
};

type EventList = {
  items: {
    lastTimestamp?: string;
    eventTime?: string;
    metadata: { creationTimestamp?: string };
    involvedObject: { kind?: string; name?: string };
    reason?: string;
    message?: string;
    type?: string;
  }[];
};

/** The cluster's view through `api` (an administrator's client). */
export async function clusterView(api: KubeClient, namespace: string): Promise<ClusterView> {
  const [nodes, daemonSets, events] = await Promise.all([
    api.get<NodeList>("/api/v1/nodes"),
    api.get<DaemonSetList>(`/apis/apps/v1/namespaces/${namespace}/daemonsets`),
    api.get<EventList>("/api/v1/events"),
  ]);
  const status = (cs: Condition[] | undefined, type: string) => cs?.find((c) => c.type === type)?.status ?? "Unknown";
  return {
    server: api.server,
    nodes: nodes.items
      .map((n) => ({
        name: n.metadata.name,
        ready: status(n.status?.conditions, "Ready"),
        winfleetReady: status(n.status?.conditions, "WinfleetReady"),
        template:
          `${n.metadata.annotations?.["winfleet.io/template"] ?? ""} ${n.metadata.annotations?.["winfleet.io/template-version"] ?? ""}`.trim(),
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    daemonSets: daemonSets.items.map((d) => ({
      name: d.metadata.name,
      desired: d.status?.desiredNumberScheduled ?? 0,
      updated: d.status?.updatedNumberScheduled ?? 0,
      ready: d.status?.numberReady ?? 0,
      unavailable: d.status?.numberUnavailable ?? 0,
    })),
    events: events.items
      .map((e) => ({
        at: e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? "",
        object: `${e.involvedObject.kind ?? ""}/${e.involvedObject.name ?? ""}`,
        reason: e.reason ?? "",
        message: e.message ?? "",
        type: e.type ?? "Normal",
      }))
      .sort((a, b) => b.at.localeCompare(a.at))
      .slice(0, 20),
  };
}

const ENGINES = ["kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes"] as const;
/** The stack name the local cluster deploys under. */
export const LOCAL_STACK = "local";

/** The namespace of the local fleet's cluster side. */
export const LOCAL_NAMESPACE = "winfleet-system";

/** `n` characters of [a-z0-9], as bootstrap token ids and secrets are made of. */
function random(n: number): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: n }, () => alphabet[randomInt(alphabet.length)]).join("");
}

/**
 * The bootstrap token (`<id>.<secret>`) the stack's program derived for `node`, as the cluster holds
 * it: the fleet is the cluster's administrator, and a local host has no bootstrap to hand it over.
 */
export async function nodeToken(admin: KubeClient, stack: string, node: string): Promise<string> {
  const selector = `${STACK_LABEL}=${stackSlug(stack)},winfleet.io/node=${node}`;
  const secrets = await admin.get<{ items: { type?: string; data?: Record<string, string> }[] }>(
    `/api/v1/namespaces/kube-system/secrets?labelSelector=${encodeURIComponent(selector)}`,
  );
  const token = secrets.items.find((s) => s.type === "bootstrap.kubernetes.io/token");
  const field = (k: string) => Buffer.from(token?.data?.[k] ?? "", "base64").toString("utf8");
  if (!token || field("token-id") === "" || field("token-secret") === "")
    throw new AgentError(AgentErrorCode.Unavailable, `the stack ${stack} declared no join token for host ${node}`);
  return `${field("token-id")}.${field("token-secret")}`;
}

/**
 * The stack's fleet with the cluster section pointing at the control plane (and the agent and
 * upgrader sections a cluster needs, when the stack leaves them out), as stack-file YAML.
 */
export async function clusterStackYaml(
  spec: FleetSpec,
  cp: Pick<ControlPlane, "server" | "caCertHash">,
  tokenId: string,
): Promise<string> {
  const doc = parseYaml(await readFile(spec.stackFile, "utf8")) as { config?: Record<string, unknown> };
  const fleet = { ...((doc.config?.["winfleet:fleet"] ?? {}) as Record<string, unknown>) };
  fleet.cluster = {
    name: "local",
    // Named, not the stack's default: the status page and diagnose read the fleet's cluster side here.
    namespace: LOCAL_NAMESPACE,
    join: {
      method: "kubeadm",
      apiServer: cp.server,
      caCertHash: cp.caCertHash,
      tokenId,
      tokenSecret: "bootstrapTokenSecret",
    },
  };
  // Local hosts run the checkout's agent; nothing downloads this bundle.
  fleet.agent ??= { version: VERSION, bundle: { url: "file:///winfleet/local-fleet/agent", sha256: "0".repeat(64) } };
  // Without an upgrader section, the local pool's maxUnavailable paces the DaemonSet as it paces the fleet's rollout.
  fleet.upgrader ??= { image: `winfleet-agent:${VERSION}`, maxUnavailable: spec.maxUnavailable };
  return toYaml({ config: { "winfleet:fleet": fleet } });
}

/** The cluster side as deployed, and how to deploy a changed spec again. */
export interface ClusterSide {
  /** Deploys `spec` again with the real engine (a new template version, new content, another pace). */
  readonly deploy: (spec: FleetSpec) => Promise<void>;
}

/**
 * Deploys the cluster side of `spec` to `cp` with the stack's real Pulumi program through the Automation API (a copy
 * of the project and a file backend under `<dir>/pulumi`), with a new token secret, from which the program derives
 * each host's bootstrap token (`nodeToken` reads one back).
 */
export async function deployClusterSide(
  spec: FleetSpec,
  cp: Pick<ControlPlane, "server" | "caCertHash" | "adminKubeconfig">,
  dir: string,
  log: (line: string) => void,
): Promise<ClusterSide> {
  const engines = findEngines(ENGINES);
  const tokenId = random(6);
  const tokenSecret = random(16);
  const project = pulumiProject(engines, join(dir, "pulumi"), { KUBECONFIG: cp.adminKubeconfig });
  project.writeStack(LOCAL_STACK, await clusterStackYaml(spec, cp, tokenId));
  const contentCopy = join(project.dir, "content");
  const { LocalWorkspace, PulumiCommand } = (await import("@pulumi/pulumi")).automation;
  const cli = engines.pulumi?.binaries.pulumi ?? "pulumi";
  const envVars = Object.fromEntries(
    Object.entries(project.env).filter((e): e is [string, string] => e[1] !== undefined),
  );
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: LOCAL_STACK, workDir: project.dir },
    { envVars, pulumiCommand: await PulumiCommand.get({ root: dirname(dirname(cli)), skipVersionCheck: true }) },
  );
  await stack.setConfig("winfleet:bootstrapTokenSecret", { value: tokenSecret, secret: true });
  const up = async () => {
    const output: string[] = [];
    try {
      await stack.up({ onOutput: (line) => output.push(line) });
    } catch (e) {
      throw new AgentError(
        AgentErrorCode.ApplyFailed,
        `pulumi up of the cluster side failed:\n${output.join("").split("\n").slice(-30).join("\n")}`,
        { cause: e },
      );
    }
  };
  log("deploying the cluster side with pulumi up (namespace, RBAC, bootstrap token, content, upgraders)…");
  await up();
  const deploy = async (next: FleetSpec) => {
    // The program builds the content bundle from its copy of the project: bring the copy's content up to date first.
    await rm(contentCopy, { recursive: true, force: true });
    await copyTree(next.content, contentCopy, { recursive: true });
    project.writeStack(LOCAL_STACK, await clusterStackYaml(next, cp, tokenId));
    // Rewriting the stack file dropped the secret set beside the fleet: set it again.
    await stack.setConfig("winfleet:bootstrapTokenSecret", { value: tokenSecret, secret: true });
    log(`deploying ${next.template} ${next.templateVersion} to the cluster side with pulumi up…`);
    await up();
  };
  return { deploy };
}

/** Starts the control plane, deploys the cluster side with the real engine, and joins every host of `spec`. */
export async function startLocalCluster(
  spec: FleetSpec,
  stateDir: string,
  log: (line: string) => void,
  /** Whether a host's processes run (not stopped): its node stand-in renews nothing while they do not. */
  hostRunning?: (host: string) => boolean,
): Promise<LocalCluster> {
  const engines = findEngines(ENGINES);
  const dir = join(stateDir, "cluster");
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const k8s = engines.kubernetes;
  const etcd = engines.etcd;
  if (!k8s || !etcd)
    throw new AgentError(AgentErrorCode.Unavailable, "the kubernetes and etcd engines are missing: run npm run setup");
  const started = Date.now();
  const cp = await startControlPlane({
    dir: join(dir, "control-plane"),
    binaries: {
      etcd: etcd.binaries.etcd ?? "",
      kubeApiserver: k8s.binaries["kube-apiserver"] ?? "",
      kubeControllerManager: k8s.binaries["kube-controller-manager"] ?? "",
      kubeScheduler: k8s.binaries["kube-scheduler"] ?? "",
    },
    log,
  });
  const nodes = new Map<string, NodeStandIn>();
  const runners = new Map<string, PodRunner>();
  const kubelets: KubeletApi[] = [];
  const approver = new AbortController();
  const stop = async () => {
    approver.abort();
    for (const k of kubelets) await k.close();
    for (const r of runners.values()) await r.stop();
    for (const n of nodes.values()) await n.stop();
    await cp.stop({ keepDir: true });
  };
  try {
    log(`control plane ready in ${((Date.now() - started) / 1000).toFixed(1)} s at ${cp.server}`);
    const kubeconfig = join(stateDir, "kubeconfig");
    await copyFile(cp.adminKubeconfig, kubeconfig);

    const { deploy } = await deployClusterSide(spec, cp, dir, log);

    const admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
    // The fleet is the administrator of its cluster: it approves its own nodes' serving certificates.
    const approve = async (csr: string) => {
      const path = `/apis/certificates.k8s.io/v1/certificatesigningrequests/${csr}`;
      const obj = await admin.get<{ status?: Record<string, unknown> }>(path);
      const approved = {
        type: "Approved",
        status: "True",
        reason: "WinfleetLocalFleet",
        message: "approved by the local fleet for its own node",
      };
      await admin.put(`${path}/approval`, { ...obj, status: { ...obj.status, conditions: [approved] } });
    };
    // As in any winfleet cluster, a node's client certificate is signed for the name its token was made for only.
    void runNodeApprover(admin, LOCAL_NAMESPACE, {
      signal: approver.signal,
      intervalMs: 500,
      onError: (e) => log(`node approver: ${String(e)}`),
    });
    const labels = { "kubernetes.io/os": "windows", [POOL_LABEL]: spec.pool, [STACK_LABEL]: stackSlug(LOCAL_STACK) };
    const joined = new Map<string, string>();
    await Promise.all(
      hostNames(spec.pool, spec.hosts).map(async (name) => {
        const credential = await tlsBootstrap({
          server: cp.server,
          caPem: cp.caPem,
          bootstrapToken: await nodeToken(admin, LOCAL_STACK, name),
          nodeName: name,
          labels,
          dir: join(hostPaths(stateDir, name).dir, "node"),
        });
        const kubelet = await startKubeletApi({
          api: new KubeClient(cp.server, { ca: cp.caPem, cert: credential.certPem, key: credential.keyPem }),
          nodeName: name,
          address: "127.0.0.1",
          caPem: cp.caPem,
          dir: join(hostPaths(stateDir, name).dir, "node"),
          logs: () => runners.get(name),
          approve,
        });
        kubelets.push(kubelet);
        const node = new NodeStandIn({
          server: cp.server,
          caPem: cp.caPem,
          credential,
          nodeName: name,
          labels,
          kubeletPort: kubelet.port,
          onError: (e) => log(`${name}: heartbeat failed (retrying every 10 s): ${String(e)}`),
          onRecovered: () => log(`${name}: heartbeat renewed again`),
          hostRunning: () => hostRunning?.(name) !== false,
        });
        nodes.set(name, node);
        await node.start();
        joined.set(name, credential.kubeconfig);
      }),
    );
    log(
      `${joined.size} hosts joined by TLS bootstrap in ${((Date.now() - started) / 1000).toFixed(1)} s; kubeconfig: ${kubeconfig}`,
    );
    const startPods = (agentEntry: string) => {
      for (const [name, node] of nodes) {
        const paths = hostPaths(stateDir, name);
        const runner = new PodRunner(node.client, name, {
          dir: join(paths.dir, "pods"),
          env: { WINFLEET_AGENT_CONFIG: paths.config, WINFLEET_BROKER: paths.broker, WINFLEET_NODE_NAME: name },
          commands: { "winfleet-agent": [process.execPath, agentEntry] },
          log,
        });
        runners.set(name, runner);
        runner.start();
      }
    };
    const view = () => clusterView(admin, LOCAL_NAMESPACE);
    const settled = (signal: AbortSignal) => daemonSetsSettled(admin, LOCAL_NAMESPACE, signal);
    return {
      server: cp.server,
      kubeconfig,
      kubeconfigFor: (host) => joined.get(host),
      startPods,
      deploy,
      settled,
      view,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
