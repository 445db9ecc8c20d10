/**
 * The lifecycle engine: plan, apply, uninstall and repair, their events, journal and status.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
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
export { readJournal, stateDir } from "./journal";
export { describeStep, REBOOT_EXIT } from "./model";
export { exitRebootExecutor, type RebootExecutor } from "./reboot";
export { windowsRebootExecutor } from "./reboot.win32";
export { readStatus, statusOf, type StatusReport } from "./status";
export { pickTemplate, resolveTarget } from "./target";
export { verifyHost } from "./verify";
export { checkServices, type ServiceCheck, type ServiceIssue, type ServiceProbe } from "./services";
export { windowsServiceProbe } from "./services.win32";
export { ledgerPath } from "./files";
