/**
 * Ending a command and everything it started. On POSIX a session and an
 * isolated command are each the leader of a process group (spawned detached),
 * so one signal to the negative pid reaches the whole group; a PowerShell
 * session (which node-powershell cannot detach) is ended as a process tree,
 * with the broker's tree kill (/proc on Linux, `taskkill /T` on Windows).
 */
import { linuxProcessHost, windowsProcessHost } from "../broker";

/** SIGKILLs the process group led by `pid`; a group that is already gone is fine. */
export function killProcessGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}

/** Kills `pid` and all its descendants. */
export async function killProcessTree(pid: number, platform: NodeJS.Platform = process.platform): Promise<void> {
  await (platform === "win32" ? windowsProcessHost : linuxProcessHost).killTree(pid);
}
