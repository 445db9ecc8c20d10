/**
 * The state directory's owner and DACL on Windows (state-acl.ts has the rules):
 * read back through PowerShell's Get-Acl as SDDL, set with icacls. An owner
 * other than SYSTEM, Administrators or the agent's own user is refused; a DACL
 * that inherits or admits others is replaced by the private one and read back
 * again. A powershell.exe that printed no descriptor
 * at all (Wine's is a stub) cannot confirm it: the private DACL is set all the
 * same, and nothing more can be checked.
 */
import { execFileSync } from "node:child_process";
import { AgentError, AgentErrorCode, errorMessage } from "./errors";
import {
  STATE_SDDL_LINE,
  STATE_USER_LINE,
  renderStateDirSddl,
  stateDirAclArgs,
  stateDirDaclProblem,
  stateDirOwnerProblem,
} from "./state-acl";

/** Runs a program to its end and returns its standard output (injected for tests). */
export type RunSync = (file: string, args: readonly string[]) => string;

const runSync: RunSync = (file, args) =>
  execFileSync(file, args, { encoding: "utf8", windowsHide: true, timeout: 60_000, stdio: ["ignore", "pipe", "pipe"] });

/** The directory's SDDL and the agent's user's SID, each undefined when PowerShell printed none. */
function aclOf(dir: string, run: RunSync): { sddl?: string; user?: string } {
  const out = run("powershell.exe", ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", renderStateDirSddl(dir)]);
  const value = (prefix: string): string | undefined =>
    out
      .split(/\r?\n/)
      .find((l) => l.startsWith(prefix))
      ?.slice(prefix.length)
      .trim();
  const sddl = value(STATE_SDDL_LINE);
  const user = value(STATE_USER_LINE);
  return { ...(sddl ? { sddl } : {}), ...(user ? { user } : {}) };
}

function denied(dir: string, why: string): AgentError {
  return new AgentError(
    AgentErrorCode.PermissionDenied,
    `${dir} ${why}: the agent keeps its state only in a directory SYSTEM or Administrators own and only they may reach. Remove it (the agent makes it afresh), or choose another root`,
  );
}

/**
 * Checks the state directory `dir`, making its DACL private when it is not (or when `created`);
 * throws when another user owns it, or when its DACL is still not private afterwards.
 */
export function secureStateDir(dir: string, created: boolean, run: RunSync = runSync): void {
  try {
    const { sddl: before, user } = aclOf(dir, run);
    if (before !== undefined) {
      const owner = stateDirOwnerProblem(before, user);
      if (owner !== undefined) throw denied(dir, owner);
    }
    if (!created && before !== undefined && stateDirDaclProblem(before, user) === undefined) return;
    run("icacls.exe", stateDirAclArgs(dir, user));
    const after = aclOf(dir, run).sddl;
    if (after === undefined) return; // nothing to read it back with
    const problem = stateDirDaclProblem(after, user);
    if (problem !== undefined) throw denied(dir, `still ${problem} after icacls`);
  } catch (e) {
    if (e instanceof AgentError) throw e;
    throw new AgentError(AgentErrorCode.PermissionDenied, `cannot make ${dir} private: ${errorMessage(e)}`);
  }
}
