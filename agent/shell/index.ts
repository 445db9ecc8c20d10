/**
 * The shells commands run in: long-lived PowerShell and sh sessions.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { PowerShellSession } from "./powershell-session";
export { ShSession } from "./sh-session";
export type { Shell } from "./shell";
