/**
 * Restarting the agent on Windows, where the bootstrap registers it as the
 * service `winfleet-agent` (NSSM hosting Node.js, restarted by the SCM's
 * failure actions): stop the service, wait until it has stopped, start it,
 * through the Service Control Manager's own client, `sc.exe` (no PowerShell to
 * start, and present on every Windows). A stop requested through the SCM is not
 * a failure, so no failure action races the start. The restart runs from the
 * detached `up` process, which the service's stop leaves alone (NSSM's
 * AppKillProcessTree is 0). The command lines and the reading of `sc query`'s
 * answer are pure functions, tested as data.
 */
import { execFile } from "node:child_process";
import { AgentError, AgentErrorCode } from "../common";
import type { ServiceManager } from "./service-manager";

/** The service name components/agent-service.ts registers (the test holds the two together). */
export const AGENT_SERVICE = "winfleet-agent";

/** How long the service has to stop. */
export const STOP_TIMEOUT_MS = 60_000;

/** `sc.exe` answering: its exit code and what it printed. */
export interface ScResult {
  readonly code: number;
  readonly output: string;
}

/** Runs `sc.exe` with `args`. */
export type Sc = (args: readonly string[]) => Promise<ScResult>;

/** sc.exe's exit code when the service does not exist (ERROR_SERVICE_DOES_NOT_EXIST). */
const NO_SUCH_SERVICE = 1060;
/** sc.exe's exit code for a start of a running service (ERROR_SERVICE_ALREADY_RUNNING). */
const ALREADY_RUNNING = 1056;

/** The argv of each step of a restart. */
export function scCommands(service: string): { query: string[]; stop: string[]; start: string[] } {
  return { query: ["query", service], stop: ["stop", service], start: ["start", service] };
}

/**
 * The service's state from `sc query`'s answer: 1 stopped, 2 start pending, 3
 * stop pending, 4 running (the number is the same in every display language).
 */
export function serviceState(output: string): number | undefined {
  const m = /^\s*STATE\s*:\s*(\d+)/m.exec(output);
  return m ? Number(m[1]) : undefined;
}

const realSc: Sc = (args) =>
  new Promise((resolve) => {
    execFile("sc.exe", [...args], { windowsHide: true }, (e, stdout, stderr) => {
      const code = e ? (typeof e.code === "number" ? e.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });

/** Restarts `service` through `sc`: stop unless stopped, wait for the stop, start. */
export async function restartService(
  service: string,
  sc: Sc = realSc,
  options: { stopTimeoutMs?: number; sleep?: (ms: number) => Promise<void> } = {},
): Promise<void> {
  const cmd = scCommands(service);
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const state = async (): Promise<number> => {
    const r = await sc(cmd.query);
    if (r.code === NO_SUCH_SERVICE || /FAILED 1060\b/.test(r.output))
      throw new AgentError(AgentErrorCode.NotFound, `the ${service} service is not installed`);
    const s = serviceState(r.output);
    if (r.code !== 0 || s === undefined)
      throw new AgentError(AgentErrorCode.ApplyFailed, `sc query ${service} failed (${r.code}): ${r.output.trim()}`);
    return s;
  };
  if ((await state()) !== 1) {
    // Its exit code is not the verdict: a service already stopping, or stopped meanwhile, answers with an error.
    await sc(cmd.stop);
    const deadline = Date.now() + (options.stopTimeoutMs ?? STOP_TIMEOUT_MS);
    while ((await state()) !== 1) {
      if (Date.now() >= deadline)
        throw new AgentError(
          AgentErrorCode.ApplyFailed,
          `the ${service} service did not stop within ${(options.stopTimeoutMs ?? STOP_TIMEOUT_MS) / 1000} s`,
        );
      await sleep(250);
    }
  }
  const started = await sc(cmd.start);
  if (started.code !== 0 && started.code !== ALREADY_RUNNING)
    throw new AgentError(
      AgentErrorCode.ApplyFailed,
      `sc start ${service} failed (${started.code}): ${started.output.trim()}`,
    );
}

/** The Windows manager: the service the bootstrap registered. */
export function windowsServiceManager(service = AGENT_SERVICE, sc: Sc = realSc): ServiceManager {
  return { restart: () => restartService(service, sc) };
}
