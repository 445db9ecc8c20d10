/**
 * The Service Control Manager as a {@link ServiceProbe}, through sc.exe: its
 * numeric codes (START_TYPE 2 AUTO_START, STATE 4 RUNNING) read the same in
 * every display language. Restoring sets the start type to automatic (sc
 * config start= auto) and starts the service; 1056 (already running) is no
 * failure.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import type { ServiceProbe, ServiceState } from "./services";

const SC = join(process.env.SystemRoot ?? "C:\\Windows", "System32", "sc.exe");
/** sc.exe's exit codes: the service does not exist; it is already running. */
const DOES_NOT_EXIST = 1060;
const ALREADY_RUNNING = 1056;

function sc(args: readonly string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(SC, [...args], { windowsHide: true, timeout: 60_000 }, (error, stdout) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, out: stdout });
    });
  });
}

/** Parses `sc qc` and `sc query` output into a state. */
export function parseScState(qc: string, query: string): Omit<ServiceState, "exists"> {
  const start = /START_TYPE\s*:\s*(\d+)/.exec(qc)?.[1];
  const state = /STATE\s*:\s*(\d+)/.exec(query)?.[1];
  const startType = start === "4" ? "disabled" : start === "3" ? "manual" : "automatic";
  return { running: state === "4", startType };
}

/** The Windows probe. */
export const windowsServiceProbe: ServiceProbe = {
  async state(name) {
    const qc = await sc(["qc", name]);
    if (qc.code === DOES_NOT_EXIST) return { exists: false, running: false, startType: "disabled" };
    const query = await sc(["query", name]);
    return { exists: true, ...parseScState(qc.out, query.out) };
  },
  async restore(name) {
    const config = await sc(["config", name, "start=", "auto"]);
    if (config.code !== 0) throw new Error(`sc config ${name} start= auto exited ${config.code}`);
    const start = await sc(["start", name]);
    if (start.code !== 0 && start.code !== ALREADY_RUNNING) throw new Error(`sc start ${name} exited ${start.code}`);
  },
};
