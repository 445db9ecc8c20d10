/**
 * Rebooting a Windows host: `shutdown.exe /r` with the reason as its comment
 * and a planned-maintenance reason code, a few seconds after the journal was
 * flushed. The command line is rendered by a pure function, tested as data.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { type RebootExecutor, currentBootId } from "./reboot";

const run = promisify(execFile);

/** shutdown.exe limits its comment to 512 characters. */
const COMMENT_LIMIT = 512;

/** argv that restarts the machine in `delaySeconds`, saying why. */
export function shutdownCommand(reasons: readonly string[], delaySeconds = 10): string[] {
  const comment = `winfleet: ${reasons.join("; ")}`.replace(/[\r\n"]+/g, " ");
  return [
    "shutdown.exe",
    "/r",
    "/t",
    String(Math.max(0, Math.trunc(delaySeconds))),
    "/d",
    "p:4:1",
    "/c",
    comment.slice(0, COMMENT_LIMIT),
  ];
}

/** The Windows executor: a real restart; done once the boot time has changed. */
export const windowsRebootExecutor: RebootExecutor = {
  kind: "windows",
  bootId: currentBootId,
  async reboot(reasons) {
    const [file, ...args] = shutdownCommand(reasons);
    await run(file ?? "shutdown.exe", args, { windowsHide: true });
  },
  async completed(request) {
    return request.bootId === undefined || request.bootId !== (await currentBootId());
  },
};
