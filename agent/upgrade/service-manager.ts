/**
 * Restarting the agent service, behind one interface: systemd on Linux hosts,
 * the Service Control Manager on Windows (service-manager.win32.ts), and a
 * pid-file supervisor for hosts without either (the local fleet, the tests).
 */
import { execFile, spawn } from "node:child_process";
import { openSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { AGENT_NODE_FLAGS } from "../common";

/** Restarts the agent so it runs the code `current` points at. */
export interface ServiceManager {
  restart(): Promise<void>;
}

const run = promisify(execFile);

/** systemd: `systemctl restart <unit>`. */
export function systemdManager(unit = "winfleet-agent.service"): ServiceManager {
  return { restart: async () => void (await run("systemctl", ["restart", unit])) };
}

/**
 * A supervisor without an init system: the agent runs detached from
 * `<install>/current`, its pid in `<install>/agent.pid`, output in `agent.log`.
 */
export function pidFileManager(
  installDir: string,
  args: readonly string[],
): ServiceManager & { stop(): Promise<void>; start(): Promise<number> } {
  const pidFile = join(installDir, "agent.pid");
  // The agent's process group off Windows; on Windows (no process groups, and no SIGTERM) the agent itself.
  const target = (pid: number): number => (process.platform === "win32" ? pid : -pid);
  const stop = async (): Promise<void> => {
    const pid = Number(await readFile(pidFile, "utf8").catch(() => ""));
    if (pid > 0) {
      try {
        process.kill(target(pid), "SIGTERM");
      } catch {
        // already gone
      }
      for (let i = 0; i < 100; i++) {
        try {
          process.kill(pid, 0);
        } catch {
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      try {
        process.kill(target(pid), "SIGKILL");
      } catch {
        // stopped in time
      }
    }
    await rm(pidFile, { force: true });
  };
  const start = async (): Promise<number> => {
    await mkdir(installDir, { recursive: true });
    const log = openSync(join(installDir, "agent.log"), "a");
    const entry = join(installDir, "current", "bin", "winfleet-agent.js");
    const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, entry, ...args], {
      detached: true,
      stdio: ["ignore", log, log],
    });
    child.unref();
    await writeFile(pidFile, String(child.pid));
    return child.pid ?? -1;
  };
  return {
    stop,
    start,
    async restart() {
      await stop();
      await start();
    },
  };
}
