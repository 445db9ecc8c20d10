/**
 * Windows process operations, through the system's own tools: identity from
 * the process start time (PowerShell), tree kill with `taskkill /T /F`. The
 * command lines are rendered by pure functions so they are tested as data.
 * When taskkill cannot end the tree (it is missing, or refuses its options, as
 * Wine's does `/T`), the process itself is still ended (TerminateProcess).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { ProcessHost } from "./process-host";

const run = promisify(execFile);

/** argv for reading a process's start time as a FILETIME, empty output when it does not exist. */
export function identityCommand(pid: number): string[] {
  return [
    "powershell.exe",
    "-NoLogo",
    "-NoProfile",
    "-NonInteractive",
    "-Command",
    `$p = Get-Process -Id ${Math.trunc(pid)} -ErrorAction SilentlyContinue; if ($p) { $p.StartTime.ToFileTimeUtc() }`,
  ];
}

/** argv that kills a process and its descendants. */
export function killTreeCommand(pid: number): string[] {
  return ["taskkill.exe", "/T", "/F", "/PID", String(Math.trunc(pid))];
}

/** The Windows implementation. */
export const windowsProcessHost: ProcessHost = {
  async identity(pid) {
    const [file, ...args] = identityCommand(pid);
    const { stdout } = await run(file ?? "", args, { windowsHide: true });
    return stdout.trim() || undefined;
  },
  async killTree(pid) {
    const [file, ...args] = killTreeCommand(pid);
    try {
      await run(file ?? "", args, { windowsHide: true });
    } catch {
      // Gone already, or taskkill failed: the process, at least, must not outlive this.
      try {
        process.kill(Math.trunc(pid), "SIGKILL");
      } catch {
        // gone
      }
    }
  },
};
