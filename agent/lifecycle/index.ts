/**
 * The lifecycle engine: plan, apply, uninstall and repair, their events, journal and status.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export {
  type Drainer,
  type DrainOutcome,
  type EvictionResult,
  type NodeDrainApi,
  drainNode,
  endDrain,
  finishDrain,
} from "./drain";
export { type DrainPod, podVerdict, waitingText } from "./drain-pods";
export { apply, type EngineDeps, previewApply, repair, uninstall } from "./engine";
export { missingVariables, WITHHELD } from "./environment";
export {
  type AgentState,
  type DriftItem,
  fanOut,
  type LifecycleEvent,
  type LifecycleObserver,
  type TemplateRef,
} from "./events";
export type { RunOutcome } from "./executor";
export { type DrainRecord, readJournal, stateDir, stateOf } from "./journal";
export { describeStep, disruptionOf, REBOOT_EXIT } from "./model";
export { exitRebootExecutor, type RebootExecutor } from "./reboot";
export { windowsRebootExecutor } from "./reboot.win32";
export { readStatus, statusOf, type StatusReport } from "./status";
export { pickTemplate, resolveTarget } from "./target";
export { verifyHost } from "./verify";
export { checkServices, type ServiceCheck, type ServiceIssue, type ServiceProbe } from "./services";
export { windowsServiceProbe } from "./services.win32";
export { ledgerPath } from "./files";
