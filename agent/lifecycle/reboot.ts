/**
 * Reboots behind one interface, called only after the journal that says why
 * has been flushed. Off Windows the default records nothing more and lets the
 * agent exit 3010 ("success, reboot required"): whatever supervises it (the
 * local fleet, systemd, a test) starts it again, and it continues. On Windows,
 * `shutdown.exe` restarts the machine (see reboot.win32.ts).
 */
import { readFile } from "node:fs/promises";
import { uptime } from "node:os";

/** A recorded reboot request. */
export interface RebootRequest {
  readonly bootId?: string;
}

/** Restarts the host. */
export interface RebootExecutor {
  readonly kind: "exit" | "windows";
  /** Identifies the current boot, recorded with a request. */
  bootId(): Promise<string | undefined>;
  /** Asks for the restart; the agent exits 3010 once this resolves. */
  reboot(reasons: readonly string[]): Promise<void>;
  /** Whether a recorded request has happened (the host started again since). */
  completed(request: RebootRequest): Promise<boolean>;
}

/** The boot id on Linux, or the boot time (to the ten seconds) elsewhere. */
export async function currentBootId(): Promise<string> {
  const linux = await readFile("/proc/sys/kernel/random/boot_id", "utf8").catch(() => undefined);
  if (linux) return linux.trim();
  return String(Math.round((Date.now() / 1000 - uptime()) / 10) * 10);
}

/** Off Windows: exit 3010 and let the supervisor start the agent again; the next start counts the reboot as done. */
export const exitRebootExecutor: RebootExecutor = {
  kind: "exit",
  bootId: currentBootId,
  reboot: () => Promise.resolve(),
  completed: () => Promise.resolve(true),
};
