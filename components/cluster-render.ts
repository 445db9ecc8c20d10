/**
 * Cluster-side objects as pure renders: the stack's winfleet namespace and the
 * upgraders' service account (the agent itself reports with its node's own
 * credentials, under the Node authorizer), and what joining needs — bootstrap
 * tokens (one per node, one per scale set), the TLS-bootstrap bindings without
 * kubeadm's approval of any name, and winfleet's approver, which signs only the
 * names a token was made for (an RKE2 agent joins with the server's own agent
 * token, which needs nothing in the cluster); and kube-proxy's own identity on
 * kubeadm clusters (the node's credentials carry no right to read Services or
 * EndpointSlices). Secret values come in as arguments; the components pass
 * them as Pulumi secrets. Every object carries the stack's label, and whatever
 * lies outside the stack's namespace its name (stack-names.ts).
 */

import type { KubeObject } from "./kube-objects";
import { STACK_LABEL, clusterScopedName, stackSlug } from "./stack-names";

type Obj = KubeObject;

/** The labels every object of a stack carries. */
export function stackLabels(stack: string, component?: string): Record<string, string> {
  return {
    "app.kubernetes.io/part-of": "winfleet",
    [STACK_LABEL]: stackSlug(stack),
    ...(component ? { "app.kubernetes.io/component": component } : {}),
  };
}

/** Pod Security Admission labels for a namespace whose pods run as HostProcess containers. */
const PRIVILEGED = {
  "pod-security.kubernetes.io/enforce": "privileged",
  "pod-security.kubernetes.io/audit": "privileged",
  "pod-security.kubernetes.io/warn": "privileged",
} as const;

/** The namespace and the upgraders' ServiceAccount. */
export function renderAgentAccess(namespace: string, stack: string): Obj[] {
  const labels = stackLabels(stack);
  return [
    {
      apiVersion: "v1",
      kind: "Namespace",
      // The upgraders are HostProcess pods on the host network, which Pod Security Admission allows
      // only at the privileged level; clusters that default to baseline or restricted refuse them.
      metadata: { name: namespace, labels: { ...labels, ...PRIVILEGED } },
    },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "winfleet-upgrader", namespace, labels } },
  ];
}

/**
 * The group of winfleet's bootstrap tokens: it may ask for node client certificates, and nothing approves them but
 * winfleet's approver.
 */
export const WINFLEET_TOKEN_GROUP = "system:bootstrappers:winfleet:nodes";
/** The ConfigMap (in the winfleet namespace) naming, per token id, the node names that token may join as. */
export const NODE_NAMES_CONFIGMAP = "winfleet-node-names";
/** The approver's service account (and Deployment, when the stack runs one). */
export const NODE_APPROVER = "winfleet-node-approver";

/** A bootstrap token to render: its id and secret, expiry, and what it is for. */
export interface BootstrapTokenArgs {
  readonly id: string;
  readonly secret: unknown;
  /** RFC 3339. */
  readonly expiration: string;
  readonly pool: string;
  /** The node it is for; absent for a scale set's token. */
  readonly node?: string;
  /** The stack that made it. */
  readonly stack: string;
}

/**
 * One bootstrap token Secret, in winfleet's token group only (not kubeadm's default-node-token
 * group, whose CSRs kubeadm's binding approves for any name). It always expires.
 */
export function renderBootstrapToken(t: BootstrapTokenArgs, description: string): Obj {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: `bootstrap-token-${t.id}`,
      namespace: "kube-system",
      labels: {
        ...stackLabels(t.stack),
        "winfleet.io/pool": t.pool,
        ...(t.node !== undefined ? { "winfleet.io/node": t.node } : {}),
      },
    },
    type: "bootstrap.kubernetes.io/token",
    stringData: {
      description,
      "token-id": t.id,
      "token-secret": t.secret,
      expiration: t.expiration,
      "usage-bootstrap-authentication": "true",
      "usage-bootstrap-signing": "true",
      "auth-extra-groups": WINFLEET_TOKEN_GROUP,
    },
  };
}

/**
 * What TLS bootstrap needs with winfleet's tokens: they may create node client CSRs, and a node may
 * renew its own certificate (the built-in approver checks that a renewal is for the requester's own
 * name). Nothing approves a first certificate for whatever name a token asks: that is the approver's.
 */
export function renderTlsBootstrapAccess(stack: string): Obj[] {
  const labels = stackLabels(stack);
  const bind = (name: string, role: string, group: string): Obj => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: clusterScopedName(stack, name), labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }],
  });
  return [
    bind("kubelet-bootstrap", "system:node-bootstrapper", WINFLEET_TOKEN_GROUP),
    bind(
      "node-autoapprove-certificate-rotation",
      "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
      "system:nodes",
    ),
  ];
}

/** What the approver reads for a token id: its pool, and the names (or the scale set's prefix) it may join as. */
export interface TokenNames {
  readonly id: string;
  readonly pool: string;
  readonly names?: readonly string[];
  readonly prefix?: string;
}

/**
 * The approver's side: the ConfigMap of names per token, the approver's identity (read CSRs and
 * that ConfigMap, list Nodes, approve node client certificates for the kubelet signer, nothing
 * else), and, given an image that carries the agent, its Deployment on a Linux node.
 */
export function renderNodeApproval(
  namespace: string,
  stack: string,
  tokens: readonly TokenNames[],
  image?: string,
): Obj[] {
  const labels = stackLabels(stack, "node-approver");
  const role = clusterScopedName(stack, "node-approver");
  const data = Object.fromEntries(
    tokens.map((t) => [
      t.id,
      JSON.stringify({
        pool: t.pool,
        ...(t.names ? { names: t.names } : {}),
        ...(t.prefix !== undefined ? { prefix: t.prefix } : {}),
      }),
    ]),
  );
  const subjects = [{ kind: "ServiceAccount", name: NODE_APPROVER, namespace }];
  const objects: Obj[] = [
    { apiVersion: "v1", kind: "ConfigMap", metadata: { name: NODE_NAMES_CONFIGMAP, namespace, labels }, data },
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: NODE_APPROVER, namespace, labels } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: role, labels },
      rules: [
        {
          apiGroups: ["certificates.k8s.io"],
          resources: ["certificatesigningrequests"],
          verbs: ["get", "list", "watch"],
        },
        { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests/approval"], verbs: ["update"] },
        {
          apiGroups: ["certificates.k8s.io"],
          resources: ["signers"],
          resourceNames: ["kubernetes.io/kube-apiserver-client-kubelet"],
          verbs: ["approve"],
        },
        { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: role, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "winfleet:node-approver", namespace, labels },
      rules: [{ apiGroups: [""], resources: ["configmaps"], resourceNames: [NODE_NAMES_CONFIGMAP], verbs: ["get"] }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "winfleet:node-approver", namespace, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "winfleet:node-approver" },
      subjects,
    },
  ];
  if (image !== undefined)
    objects.push({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: NODE_APPROVER, namespace, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: { "app.kubernetes.io/component": "node-approver" } },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: NODE_APPROVER,
            nodeSelector: { "kubernetes.io/os": "linux" },
            securityContext: { runAsNonRoot: true, runAsUser: 65534, seccompProfile: { type: "RuntimeDefault" } },
            containers: [
              {
                name: "approver",
                image,
                args: ["approve-nodes", "--in-cluster", "--namespace", namespace],
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ["ALL"] },
                },
                resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "256Mi" } },
              },
            ],
          },
        },
      },
    });
  return objects;
}

/**
 * A single bootstrap token and the bindings TLS bootstrap needs, with no names attached (what the
 * cluster tests join with, running the approver themselves); `expiration` is RFC 3339.
 */
export function renderKubeadmJoin(
  stack: string,
  tokenId: string,
  tokenSecret: unknown,
  description: string,
  expiration: string,
): Obj[] {
  return [
    renderBootstrapToken({ id: tokenId, secret: tokenSecret, expiration, pool: "", stack }, description),
    ...renderTlsBootstrapAccess(stack),
  ];
}

/** kube-proxy's service account, and the Secret its long-lived token is kept in. */
export const KUBE_PROXY_ACCOUNT = "winfleet-kube-proxy";
/** The Secret (type kubernetes.io/service-account-token) the token controller fills for {@link KUBE_PROXY_ACCOUNT}. */
export const KUBE_PROXY_TOKEN_SECRET = "winfleet-kube-proxy-token";

/**
 * kube-proxy's identity on Windows nodes: a service account whose token the
 * cluster's token controller puts into a Secret, bound to a ClusterRole with
 * exactly what kube-proxy reads and writes (the rules of the built-in
 * system:node-proxier, less the Endpoints kube-proxy no longer watches).
 */
export function renderKubeProxyAccess(namespace: string, stack: string): Obj[] {
  const labels = stackLabels(stack, "kube-proxy");
  const role = clusterScopedName(stack, "kube-proxy");
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: KUBE_PROXY_ACCOUNT, namespace, labels } },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: KUBE_PROXY_TOKEN_SECRET,
        namespace,
        labels,
        annotations: { "kubernetes.io/service-account.name": KUBE_PROXY_ACCOUNT },
      },
      type: "kubernetes.io/service-account-token",
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: role, labels },
      rules: [
        { apiGroups: [""], resources: ["services", "nodes"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
        { apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["create", "patch", "update"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: role, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ kind: "ServiceAccount", name: KUBE_PROXY_ACCOUNT, namespace }],
    },
  ];
}

/** Calico's service account on Windows nodes, and the Secret its long-lived token is kept in. */
export const CALICO_ACCOUNT = "winfleet-calico-node";
/** The Secret (type kubernetes.io/service-account-token) the token controller fills for {@link CALICO_ACCOUNT}. */
export const CALICO_TOKEN_SECRET = "winfleet-calico-node-token";

/**
 * Calico's identity on Windows nodes (Kubernetes datastore, VXLAN): one kubeconfig
 * serves calico-node's startup, Felix and the CNI plugin (the Windows CNI config
 * names it). The rules are Calico 3.29's calico-node ClusterRole less what only
 * Linux nodes use: minting the Linux CNI plugin's tokens (serviceaccounts/token),
 * creating BGP objects (an upgrade from Calico 2.6; Windows runs VXLAN), reading
 * DaemonSets (the host-local IPAM migration); and ConfigMaps narrowed from every
 * one in the cluster to kube-system's kubeadm-config (startup's pod CIDR detection).
 */
export function renderCalicoAccess(namespace: string, stack: string): Obj[] {
  const labels = stackLabels(stack, "calico-node");
  const role = clusterScopedName(stack, "calico-node");
  const kubeadmConfig = clusterScopedName(stack, "calico-node-kubeadm-config");
  const calico = "crd.projectcalico.org";
  const subjects = [{ kind: "ServiceAccount", name: CALICO_ACCOUNT, namespace }];
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: CALICO_ACCOUNT, namespace, labels } },
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: CALICO_TOKEN_SECRET,
        namespace,
        labels,
        annotations: { "kubernetes.io/service-account.name": CALICO_ACCOUNT },
      },
      type: "kubernetes.io/service-account-token",
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: role, labels },
      rules: [
        // The CNI plugin reads the pod, its node and namespace, and patches the pod's status.
        { apiGroups: [""], resources: ["pods", "nodes", "namespaces"], verbs: ["get"] },
        { apiGroups: [""], resources: ["pods/status"], verbs: ["patch"] },
        // Felix: Service-based policy rules, Kubernetes network policy, policy information.
        { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list", "watch"] },
        { apiGroups: [""], resources: ["endpoints", "services"], verbs: ["get", "list", "watch"] },
        { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: ["list", "watch"] },
        { apiGroups: [""], resources: ["pods", "namespaces", "serviceaccounts"], verbs: ["list", "watch"] },
        // The node's Calico data lives on its Node (annotations, the NetworkUnavailable condition).
        { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
        { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch", "update"] },
        {
          apiGroups: [calico],
          resources: [
            "globalfelixconfigs",
            "felixconfigurations",
            "bgppeers",
            "globalbgpconfigs",
            "bgpconfigurations",
            "ippools",
            "ipreservations",
            "ipamblocks",
            "globalnetworkpolicies",
            "globalnetworksets",
            "networkpolicies",
            "networksets",
            "clusterinformations",
            "hostendpoints",
            "blockaffinities",
            "caliconodestatuses",
          ],
          verbs: ["get", "list", "watch"],
        },
        // Startup makes the default configuration when it is missing.
        {
          apiGroups: [calico],
          resources: ["ippools", "felixconfigurations", "clusterinformations"],
          verbs: ["create", "update"],
        },
        { apiGroups: [calico], resources: ["caliconodestatuses"], verbs: ["update"] },
        // Calico IPAM: the node's block affinities and the pods' addresses.
        {
          apiGroups: [calico],
          resources: ["blockaffinities", "ipamblocks", "ipamhandles"],
          verbs: ["get", "list", "create", "update", "delete"],
        },
        { apiGroups: [calico], resources: ["ipamconfigs"], verbs: ["get", "create"] },
        { apiGroups: [calico], resources: ["blockaffinities"], verbs: ["watch"] },
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: role, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects,
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: kubeadmConfig, namespace: "kube-system", labels },
      rules: [{ apiGroups: [""], resources: ["configmaps"], resourceNames: ["kubeadm-config"], verbs: ["get"] }],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: kubeadmConfig, namespace: "kube-system", labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: kubeadmConfig },
      subjects,
    },
  ];
}
