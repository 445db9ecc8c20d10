/**
 * Restarting the agent on Windows, where the bootstrap registers it as the
 * service `winfleet-agent` (NSSM hosting Node.js, restarted by the SCM's
 * failure actions): stop the service, wait until it has stopped, start it. A
 * stop requested through the SCM is not a failure, so no failure action races
 * the start. The restart runs from the detached `up` process, which the
 * service's stop leaves alone (NSSM's AppKillProcessTree is 0). Rendered as
 * argv by a pure function, so it is tested as data and parsed as PowerShell.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { ServiceManager } from "./service-manager";

const run = promisify(execFile);

/** The service name components/agent-service.ts registers (the test holds the two together). */
const AGENT_SERVICE = "winfleet-agent";

/** The PowerShell that restarts the service (at most 60 s for it to stop). */
export function restartServiceScript(service: string): string {
  const name = `'${service.replace(/'/g, "''")}'`;
  return [
    "$ErrorActionPreference = 'Stop'",
    `if ((Get-Service -Name ${name}).Status -ne 'Stopped') { Stop-Service -Name ${name} -Force -NoWait }`,
    "$deadline = (Get-Date).AddSeconds(60)",
    `while ((Get-Service -Name ${name}).Status -ne 'Stopped') {`,
    `    if ((Get-Date) -gt $deadline) { throw "the ${service.replace(/"/g, "'")} service did not stop within 60 s" }`,
    "    Start-Sleep -Milliseconds 500",
    "}",
    `Start-Service -Name ${name}`,
  ].join("\n");
}

/** argv restarting the agent's service. */
export function restartServiceCommand(service = AGENT_SERVICE): string[] {
  return [
    "powershell.exe",
    "-NoLogo",
    "-NoProfile",
    "-NonInteractive",
    "-ExecutionPolicy",
    "Bypass",
    "-Command",
    restartServiceScript(service),
  ];
}

/** The Windows manager: the service the bootstrap registered. */
export function windowsServiceManager(service = AGENT_SERVICE): ServiceManager {
  return {
    async restart() {
      const [file, ...args] = restartServiceCommand(service);
      await run(file ?? "powershell.exe", args, { windowsHide: true });
    },
  };
}
