/**
 * Restarting the agent on Windows, where the bootstrap registers it as the
 * scheduled task `winfleet-agent` (run at startup as SYSTEM, restarted on
 * failure): stop the task, wait until it no longer runs, start it. Rendered as
 * argv by a pure function, so it is tested as data and parsed as PowerShell.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { ServiceManager } from "./service-manager";

const run = promisify(execFile);

/** The PowerShell that restarts the task (at most 60 s for it to stop). */
export function restartTaskScript(task: string): string {
  const name = `'${task.replace(/'/g, "''")}'`;
  return [
    "$ErrorActionPreference = 'Stop'",
    `$task = Get-ScheduledTask -TaskName ${name}`,
    `if ($task.State -eq 'Running') { Stop-ScheduledTask -TaskName ${name} }`,
    "$deadline = (Get-Date).AddSeconds(60)",
    `while ((Get-ScheduledTask -TaskName ${name}).State -eq 'Running') {`,
    `    if ((Get-Date) -gt $deadline) { throw "the ${task.replace(/"/g, "'")} task did not stop within 60 s" }`,
    "    Start-Sleep -Milliseconds 500",
    "}",
    `Start-ScheduledTask -TaskName ${name}`,
  ].join("\n");
}

/** argv restarting the agent's scheduled task. */
export function restartTaskCommand(task = "winfleet-agent"): string[] {
  return ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command", restartTaskScript(task)];
}

/** The Windows manager: the scheduled task the bootstrap registered. */
export function windowsTaskManager(task = "winfleet-agent"): ServiceManager {
  return {
    async restart() {
      const [file, ...args] = restartTaskCommand(task);
      await run(file ?? "powershell.exe", args, { windowsHide: true });
    },
  };
}
