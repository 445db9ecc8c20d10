/**
 * The wins-compatible broker: its config, the process host and pool, and the agent's status service.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export type { AgentStatus } from "./agent-service";
export {
  type BrokerConfig,
  DEFAULT_LISTEN,
  DEFAULT_PROXY,
  endpointPath,
  loadBrokerConfig,
  parseBrokerConfig,
} from "./config";
export type { StatusResponse } from "./generated/winfleet/agent_pb";
export { parseListValue, parsePortSpec } from "./list-value";
export { linuxProcessHost } from "./process-host";
export { windowsProcessHost } from "./process-host.win32";
export { type ProcessInfo, readProcessRecords } from "./process-pool";
