/**
 * Reporting a node's lifecycle to Kubernetes as Events and a status object.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { createReporter } from "./create";
export { createDrainer, drainPod, nodeDrainApi } from "./drain-api";
export { ExecCredentials } from "./exec-credential";
export { credentialsFor, execClusterInfo, loadKubeconfig } from "./kubeconfig";
export { type ServerTls, proxied } from "./node-api";
