/**
 * A throwaway Kubernetes control plane on loopback and the node stand-in that joins it.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { type ControlPlane, startControlPlane } from "./control-plane";
export { findEngines } from "./engines";
export { KubeClient, KubeError } from "./kube-client";
export { type KubeletApi, startKubeletApi } from "./kubelet-api";
export { NodeStandIn, tlsBootstrap } from "./node-stand-in";
export { PodRunner } from "./pod-runner";
export { pulumiProject } from "./pulumi-project";
export { approveNodeCsrs, NODE_NAMES_CONFIGMAP, runNodeApprover, WINFLEET_TOKEN_GROUP } from "./node-approver";
export { CLUSTER_INFO, discoverClusterCa, publishClusterInfo, spkiPin } from "./cluster-info";
export { type SandboxNode, startSandboxNode } from "./sandbox-node";
