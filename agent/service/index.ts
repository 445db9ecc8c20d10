/**
 * The node agent as `serve` runs it: its config file, retargeting and the serve loop.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { type AgentConfig, agentConfigSchema, loadAgentConfig, reportConfigSchema } from "./config";
export { retarget } from "./retarget";
export { serve } from "./serve";
export { type LifecycleOptions, readKey, resolveRoot } from "./options";
export { type Resolved, rebootExecutor, reportDowngrade, resolveOptions, resolveWith } from "./lifecycle-setup";
export { SERVICE_MANAGERS, type SelfUpgradeOptions, selfUpgrade } from "./self-upgrade";
