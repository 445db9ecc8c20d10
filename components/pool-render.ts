/**
 * Pure pieces of a Windows node pool: the marketplace image for a Windows
 * Server release, the tags every node carries, and the non-secret agent config
 * a node's bootstrap writes (the names of its Azure resources: azure-names.ts).
 */
/** The node label that names a node's pool (set at join, selected by the pool's upgrader). */
export const POOL_LABEL = "winfleet.io/pool";

/** A marketplace image reference. */
export interface ImageRef {
  readonly publisher: string;
  readonly offer: string;
  readonly sku: string;
  readonly version: string;
}

/** Server Core, generation 2: what AKS and the sig-windows guides run. */
const RELEASES: Readonly<Record<"ws2019" | "ws2022" | "ws2025", ImageRef>> = {
  ws2019: {
    publisher: "MicrosoftWindowsServer",
    offer: "WindowsServer",
    sku: "2019-datacenter-core-g2",
    version: "latest",
  },
  ws2022: {
    publisher: "MicrosoftWindowsServer",
    offer: "WindowsServer",
    sku: "2022-datacenter-core-g2",
    version: "latest",
  },
  ws2025: {
    publisher: "MicrosoftWindowsServer",
    offer: "WindowsServer",
    sku: "2025-datacenter-core-g2",
    version: "latest",
  },
};

/** A Windows Server image: a release name (Server Core, generation 2) or an explicit marketplace image. */
export type ImageArgs = "ws2019" | "ws2022" | "ws2025" | ImageRef;

/**
 * What every node of the fleet is configured with, whatever its pool: the
 * content it runs, the agent, and how it joins (which decides where its
 * kubeconfig lands).
 */
export interface NodeConfigArgs {
  readonly template: string;
  readonly templateVersion: string;
  /** Values for content commands on every node (a pool's own go over them). */
  readonly variables: Readonly<Record<string, string>>;
  readonly agentVersion: string;
  /** The ed25519 public key (PEM) nodes pin: they then refuse unsigned bundles. */
  readonly publicKey?: string | undefined;
  readonly joinMethod: keyof typeof NODE_KUBECONFIG;
}

/** The image of an Azure pool. */
export function imageOf(image: ImageArgs): ImageRef {
  return typeof image === "string" ? RELEASES[image] : image;
}

/** The names of a `local` pool's sandbox hosts (`winfleet local up`): the pool's name and a number. */
export function localHostNames(pool: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${pool}-${i + 1}`);
}

/** Tags every node of a pool carries: what it runs, so the portal and the policy pack can see it. */
export function poolTags(
  node: NodeConfigArgs,
  pool: string,
  bootstrapSha256: string,
  bootstrapEpoch: string,
): Record<string, string> {
  return {
    "winfleet-pool": pool,
    "winfleet-template": node.template,
    "winfleet-template-version": node.templateVersion,
    "winfleet-agent-version": node.agentVersion,
    "winfleet-bootstrap-sha256": bootstrapSha256,
    // What the extension's forceUpdateTag is: it changes only when what the bootstrap does does.
    "winfleet-bootstrap-epoch": bootstrapEpoch,
  };
}

/** Where the node's kubeconfig lands once the join component ran, per distribution. */
export const NODE_KUBECONFIG = {
  kubeadm: "C:\\etc\\kubernetes\\kubelet.conf",
  rke2: "C:\\var\\lib\\rancher\\rke2\\agent\\kubelet.kubeconfig",
} as const;

/** Where the broker's wins config lives on a node (the winfleet-broker component writes it). */
export const BROKER_CONFIG = "C:\\etc\\rancher\\wins\\config";

/** What of a pool the agent config takes. */
export interface PoolValues {
  readonly labels: Readonly<Record<string, string>>;
  readonly registerTaint: boolean;
  readonly variables: Readonly<Record<string, string>>;
}

/**
 * How many of `count` machines a change may take at once under `maxUnavailable` (a number, or a
 * percentage rounded up as a DaemonSet rounds it): at least 1.
 */
export function batchSize(maxUnavailable: number | string, count: number): number {
  const n =
    typeof maxUnavailable === "number"
      ? maxUnavailable
      : Math.ceil((count * Number(maxUnavailable.replace(/%$/, ""))) / 100);
  return Math.max(1, Math.min(Math.max(count, 1), Number.isFinite(n) ? n : 1));
}

/**
 * The non-secret agent config for a pool's nodes (content and secrets are
 * added on the node): the stack's content variables, the pool's over them,
 * and the join variables winfleet sets (the schema keeps stacks from setting those).
 * A POSIX sandbox host's bootstrap adds the paths (kubeconfig, broker, root) under its
 * install directory itself.
 */
export function nodeAgentConfig(
  node: NodeConfigArgs,
  join: Readonly<Record<string, string>>,
  pool: PoolValues,
  platform: "windows" | "posix" = "windows",
): Record<string, unknown> {
  const labels = Object.entries(pool.labels)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return {
    template: node.template,
    templateVersion: node.templateVersion,
    variables: {
      ...node.variables,
      ...pool.variables,
      ...join,
      ...(labels ? { KUBE_NODE_LABELS: labels } : {}),
      ...(pool.registerTaint ? { KUBE_REGISTER_TAINT: "true" } : {}),
    },
    ...(platform === "windows" ? { kubeconfig: NODE_KUBECONFIG[node.joinMethod], broker: BROKER_CONFIG } : {}),
    verifyIntervalSeconds: platform === "windows" ? 300 : 30,
    autoCorrect: true,
    ...(node.publicKey ? { publicKey: node.publicKey } : {}),
  };
}
