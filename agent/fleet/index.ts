/**
 * The local fleet: a manager of sandbox hosts and an optional throwaway cluster.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export {
  agentEntry,
  DEFAULT_STATE_DIR,
  localDiagnose,
  localDown,
  localExec,
  localLogs,
  localStatus,
  localUp,
} from "./local";
export { type ByoLab, localByo, localSshHosts, startByoLab } from "./byo";
