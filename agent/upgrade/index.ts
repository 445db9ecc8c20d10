/**
 * Upgrading the agent itself: bundle sources, installations, service managers and units.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { openBundle } from "./bundle-source";
export { installationAt } from "./installation";
export { pidFileManager, systemdManager } from "./service-manager";
export { windowsServiceManager } from "./service-manager.win32";
export { renderSystemdUnit, renderWindowsServiceInstall } from "./service-units";
export { type UpResult, up } from "./up";
