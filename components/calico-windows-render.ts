/**
 * Calico for Windows from the cluster side, as Calico 3.31 installs it: the
 * Tigera operator runs Calico on Windows nodes as HostProcess containers (the
 * calico-node-windows DaemonSet it renders in calico-system), once its
 * Installation enables the HNS dataplane and names the service CIDRs, and once
 * the `kubernetes-services-endpoint` ConfigMap tells Calico's Windows
 * containers where the API server is (they cannot reach it through a Service
 * before kube-proxy runs). Calico 3.31's documentation describes no other
 * Windows install: the operator owns the DaemonSet, its images and their
 * versions (the cluster's Calico release), so winfleet configures the operator
 * and does not deploy Calico's pods itself.
 *
 * The DaemonSet is held to the nodes labelled {@link CALICO_WINDOWS_LABEL}: the
 * content's calico component sets the label when the node's own Calico is gone
 * (a node moving from the node-side install) or was never there, so a stack
 * update moves no node at once; each moves when the upgrader rolls its content,
 * behind the same gate as any version change.
 */
import type { KubeObject } from "./kube-objects";

/** The node label the content's calico component sets and the operator's Windows DaemonSet selects. */
export const CALICO_WINDOWS_LABEL = "winfleet.io/calico-windows";
/** Its value. */
export const CALICO_WINDOWS_LABEL_VALUE = "hostprocess";

/** The operator's namespace, where it reads {@link SERVICES_ENDPOINT}. */
export const OPERATOR_NAMESPACE = "tigera-operator";
/** The ConfigMap (fixed name the operator reads) with the API server's host and port. */
export const SERVICES_ENDPOINT = "kubernetes-services-endpoint";
/** The Installation the operator reconciles (fixed name). */
export const INSTALLATION = "default";

/**
 * The CNI directories of winfleet's content (containerd's `bin_dir` and `conf_dir`, Calico's CNI log directory),
 * below the system drive as the operator writes them.
 */
export const WINDOWS_CNI_DIRECTORIES = {
  cniBinDir: "/opt/cni/bin",
  cniConfigDir: "/etc/cni/net.d",
  cniLogDir: "/var/log/calico/cni",
} as const;

/** What {@link renderCalicoWindows} needs. */
export interface CalicoWindowsSettings {
  /** The API server's https:// URL, as the nodes join with it. */
  readonly apiServer: string;
  /** The cluster's service CIDRs (the kube-apiserver's `--service-cluster-ip-range`). */
  readonly serviceCidrs: readonly string[];
  /** The network adapter for VXLAN; absent or empty: the primary one. */
  readonly vxlanAdapter?: string | undefined;
}

/** The host and port of an https:// URL (443 when it names none); throws on anything else. */
export function apiServerEndpoint(url: string): { host: string; port: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`the API server ${JSON.stringify(url)} is not a URL`);
  }
  if (parsed.protocol !== "https:") throw new Error(`the API server ${url} is not an https:// URL`);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"), port: parsed.port || "443" };
}

/**
 * The operator configuration: the endpoint ConfigMap (a whole object of winfleet's) and the fields of the
 * Installation winfleet manages (applied as a server-side patch; the rest of the Installation stays the cluster's).
 */
export function renderCalicoWindows(s: CalicoWindowsSettings): { endpoint: KubeObject; installation: KubeObject } {
  if (s.serviceCidrs.length === 0) throw new Error("Calico for Windows needs the cluster's service CIDRs");
  const { host, port } = apiServerEndpoint(s.apiServer);
  const labels = { "app.kubernetes.io/part-of": "winfleet", "app.kubernetes.io/component": "calico-windows" };
  return {
    endpoint: {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: SERVICES_ENDPOINT, namespace: OPERATOR_NAMESPACE, labels },
      data: { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port },
    },
    installation: {
      apiVersion: "operator.tigera.io/v1",
      kind: "Installation",
      metadata: { name: INSTALLATION },
      spec: {
        serviceCIDRs: [...s.serviceCidrs],
        calicoNetwork: { windowsDataplane: "HNS" },
        windowsNodes: {
          ...WINDOWS_CNI_DIRECTORIES,
          ...(s.vxlanAdapter ? { vxlanAdapter: s.vxlanAdapter } : {}),
        },
        calicoNodeWindowsDaemonSet: {
          spec: { template: { spec: { nodeSelector: { [CALICO_WINDOWS_LABEL]: CALICO_WINDOWS_LABEL_VALUE } } } },
        },
      },
    },
  };
}
