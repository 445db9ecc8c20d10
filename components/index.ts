/**
 * What the Pulumi components render, without Pulumi: bootstrap, content archive, node runtime and pool.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { AGENT_NSSM, renderServiceRegistrationScript } from "./agent-service";
export { MIRROR_VARIABLE, mirroredUrl } from "./mirror";
export { archiveDirectory } from "./content-archive";
export { DEFAULT_NODE_RUNTIME, type NodeRuntime } from "./node-runtime";
export type { PinnedArtifact } from "./bootstrap";
export { type NodeConfigArgs, POOL_LABEL } from "./pool-render";
export { HOST_AGENT, HOST_NODE, INSTALL } from "./upgrader-scripts";
