/**
 * What the Pulumi components render, without Pulumi: bootstrap, content archive, node runtime and pool.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { AGENT_NSSM, renderServiceRegistrationScript } from "./agent-service";
export { computerNames, poolVaultSecret, scaleSetPrefix, storageAccountId, vaultOf } from "./azure-names";
export { MIRROR_VARIABLE, mirroredUrl } from "./mirror";
export { archiveDirectory } from "./content-archive";
export { DEFAULT_NODE_RUNTIME, type NodeRuntime } from "./node-runtime";
export type { PinnedArtifact } from "./bootstrap";
export { batchSize, localHostNames, type NodeConfigArgs, POOL_LABEL } from "./pool-render";
export { nodeTokens, parseLifetime, type PoolNodes, tokenEpoch, tokenSecretOf } from "./node-tokens";
export { HOST_AGENT, HOST_NODE, INSTALL } from "./upgrader-scripts";
export { STACK_LABEL, clusterScopedName, defaultNamespace, stackSlug } from "./stack-names";
