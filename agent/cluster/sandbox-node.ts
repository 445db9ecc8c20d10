/**
 * The node side of a sandbox host adopted over SSH (the BYO path's POSIX twin): what the kubelet
 * and the join component do on a Windows node, from the values the bootstrap put in the agent
 * config. On its first start it discovers the cluster CA from cluster-info, pinned by the
 * config's KUBE_CA_CERT_HASH, and joins by TLS bootstrap with KUBE_BOOTSTRAP_TOKEN, writing the
 * node's own kubeconfig where the agent config says the agent reports from; later starts reuse
 * that credential. Then the node stand-in keeps its Node and Lease, and the pod runner runs the
 * pods bound to it (the upgraders), as HostProcess containers run on Windows.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { parse } from "yaml";
import { discoverClusterCa } from "./cluster-info";
import { type NodeCredential, NodeStandIn, tlsBootstrap } from "./node-stand-in";
import { PodRunner } from "./pod-runner";

/** What a sandbox host's node needs, read from its agent config by the command that starts it. */
export interface SandboxNodeArgs {
  readonly nodeName: string;
  /** The agent config (the upgrader pods get it as WINFLEET_AGENT_CONFIG). */
  readonly agentConfig: string;
  /** The node's kubeconfig: read when it exists, written by TLS bootstrap when not (its directory holds the key). */
  readonly kubeconfig: string;
  readonly apiServer: string;
  /** `sha256:<hex>` of the cluster CA's public key. */
  readonly caCertHash: string;
  /** `<id>.<secret>`; needed only while the node has no credential of its own. */
  readonly bootstrapToken?: string;
  /** The labels it registers with (the pool's, the stack's, `kubernetes.io/os`). */
  readonly labels: Readonly<Record<string, string>>;
  /** The host's address (the Node's InternalIP). */
  readonly address: string;
  /** The host's broker socket (WINFLEET_BROKER in the upgrader pods). */
  readonly broker: string;
  /** The agent entry `winfleet-agent` means in a pod. */
  readonly agentEntry: string;
  /** Where the pods' directories and logs go. */
  readonly podsDir: string;
  readonly log: (line: string) => void;
}

/** A running sandbox node. */
export interface SandboxNode {
  readonly credential: NodeCredential;
  stop(): Promise<void>;
}

type Kubeconfig = {
  clusters?: { cluster?: { "certificate-authority-data"?: string } }[];
  users?: { user?: { "client-certificate-data"?: string; "client-key-data"?: string } }[];
};

/** The credential and CA in a kubeconfig TLS bootstrap wrote, or undefined when it holds none. */
function savedCredential(kubeconfig: string): { credential: NodeCredential; caPem: string } | undefined {
  if (!existsSync(kubeconfig)) return undefined;
  const doc = parse(readFileSync(kubeconfig, "utf8")) as Kubeconfig;
  const b64 = (s: string | undefined) => (s ? Buffer.from(s, "base64").toString() : "");
  const user = doc.users?.[0]?.user;
  const certPem = b64(user?.["client-certificate-data"]);
  const keyPem = b64(user?.["client-key-data"]);
  const caPem = b64(doc.clusters?.[0]?.cluster?.["certificate-authority-data"]);
  if (!certPem || !keyPem || !caPem) return undefined;
  return { credential: { certPem, keyPem, kubeconfig }, caPem };
}

/** Joins (or rejoins with its saved credential), registers the Node, and runs its pods. */
export async function startSandboxNode(a: SandboxNodeArgs): Promise<SandboxNode> {
  let saved = savedCredential(a.kubeconfig);
  if (!saved) {
    if (!a.bootstrapToken)
      throw new Error(`${a.kubeconfig} does not exist and the agent config has no KUBE_BOOTSTRAP_TOKEN to join with`);
    const caPem = await discoverClusterCa(a.apiServer, a.caCertHash);
    a.log(`the cluster CA from ${a.apiServer} matches its pin; joining as ${a.nodeName} by TLS bootstrap`);
    const credential = await tlsBootstrap({
      server: a.apiServer,
      caPem,
      bootstrapToken: a.bootstrapToken,
      nodeName: a.nodeName,
      labels: a.labels,
      dir: dirname(a.kubeconfig),
    });
    saved = { credential, caPem };
  }
  const node = new NodeStandIn({
    server: a.apiServer,
    caPem: saved.caPem,
    credential: saved.credential,
    nodeName: a.nodeName,
    labels: a.labels,
    address: a.address,
    onError: (e) => a.log(`heartbeat failed: ${String(e)}`),
  });
  await node.start();
  a.log(`node ${a.nodeName} registered at ${a.address}`);
  const runner = new PodRunner(node.client, a.nodeName, {
    dir: a.podsDir,
    env: { WINFLEET_AGENT_CONFIG: a.agentConfig, WINFLEET_BROKER: a.broker, WINFLEET_NODE_NAME: a.nodeName },
    commands: { "winfleet-agent": [process.execPath, a.agentEntry] },
    log: a.log,
  });
  runner.start();
  return {
    credential: saved.credential,
    stop: async () => {
      await runner.stop();
      await node.stop();
    },
  };
}
