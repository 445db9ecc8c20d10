/**
 * Wins's DACL on a broker pipe, set through PowerShell with the rendered script
 * (security.ts) once the pipe listens, and read back. A failure, or a DACL read
 * back that lets anyone but Administrators and SYSTEM in, is an error: the
 * broker does not serve that pipe. A powershell.exe that ran and printed no
 * DACL at all (Wine's is a stub) cannot confirm it: that is reported, and the
 * pipe keeps the default descriptor, which lets others read but not write.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { AgentError, AgentErrorCode, errorMessage } from "../common";
import { PIPE_DACL_LINE, pipeDaclProblem, renderPipeAclApply } from "./security";

const run = promisify(execFile);

/** What applying the DACL found: the DACL read back, or nothing when PowerShell printed none. */
export type PipeAclResult = { readonly dacl: string } | { readonly unconfirmed: string };

/** Reads the DACL line out of the script's output and checks it; throws when it is not wins's. */
export function pipeAclOutcome(pipe: string, stdout: string): PipeAclResult {
  const line = stdout.split(/\r?\n/).find((l) => l.startsWith(PIPE_DACL_LINE));
  if (line === undefined) return { unconfirmed: `PowerShell printed no DACL for ${pipe}` };
  const dacl = line.slice(PIPE_DACL_LINE.length).trim();
  const problem = pipeDaclProblem(dacl);
  if (problem !== undefined)
    throw new AgentError(AgentErrorCode.ApplyFailed, `the pipe ${pipe} is not private: ${problem}`);
  return { dacl };
}

/** Sets wins's DACL on `pipe` (which this process created) and checks what the pipe then has. */
export async function securePipe(pipe: string): Promise<PipeAclResult> {
  let stdout: string;
  try {
    ({ stdout } = await run(
      "powershell.exe",
      ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", renderPipeAclApply(pipe)],
      { windowsHide: true, timeout: 60_000 },
    ));
  } catch (e) {
    throw new AgentError(AgentErrorCode.ApplyFailed, `cannot make the pipe ${pipe} private: ${errorMessage(e)}`);
  }
  return pipeAclOutcome(pipe, stdout);
}
