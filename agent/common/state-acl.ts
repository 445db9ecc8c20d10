/**
 * Who may reach the agent's state directory on Windows, as data. Node ignores
 * file modes there: a directory the agent makes under `C:\` inherits the
 * drive's DACL, which lets every local user read it and create files in its
 * subdirectories. The state directory instead gets a protected DACL granting
 * SYSTEM and Administrators alone (inherited by everything below it), as the
 * bootstrap gives the install directory (and the agent's own user, when it runs
 * as someone else), and must be owned by one of them: a `.winfleet` someone
 * else made in advance is refused, as on Linux one owned by another uid is.
 * state-acl.win32.ts runs these; the checks are pure.
 */

/** SYSTEM and BUILTIN\Administrators, by SDDL alias and by SID. */
const PRIVILEGED = new Set(["SY", "BA", "S-1-5-18", "S-1-5-32-544"]);

/**
 * icacls's arguments giving `dir` the private DACL: nothing inherited, full control for SYSTEM and
 * Administrators, and for the agent's own user when that is someone else (`user`, a SID), as 0700
 * keeps the agent's own uid in on Linux.
 */
export function stateDirAclArgs(dir: string, user?: string): string[] {
  // By SID, which every display language shares; (OI)(CI): files and directories below inherit it.
  const own = user !== undefined && !PRIVILEGED.has(user) ? [`*${user}:(OI)(CI)F`] : [];
  return [dir, "/inheritance:r", "/grant:r", "*S-1-5-18:(OI)(CI)F", "*S-1-5-32-544:(OI)(CI)F", ...own, "/q"];
}

/** The lines the read-back script prints the directory's security descriptor, and the agent's user, on. */
export const STATE_SDDL_LINE = "winfleet-state-sddl: ";
export const STATE_USER_LINE = "winfleet-state-user: ";

/** PowerShell that prints `dir`'s owner and DACL as SDDL, and the SID of the user it runs as. */
export function renderStateDirSddl(dir: string): string {
  return [
    "$ErrorActionPreference = 'Stop'",
    `'${STATE_SDDL_LINE}' + (Get-Acl -LiteralPath '${dir.replace(/'/g, "''")}').Sddl`,
    `'${STATE_USER_LINE}' + [Security.Principal.WindowsIdentity]::GetCurrent().User.Value`,
  ].join("\n");
}

/** The owner and the DACL's entries of an SDDL string (`O:…G:…D:…`). */
export function parseSddl(sddl: string): {
  owner: string | undefined;
  protectedDacl: boolean;
  aces: { type: string; rights: string; trustee: string }[];
} {
  const owner = /(?:^|[^A-Z])O:([A-Z]{2}|S-[0-9-]+)/.exec(sddl)?.[1];
  const d = /D:([A-Z]*)((?:\([^)]*\))*)/.exec(sddl);
  const aces = [...(d?.[2] ?? "").matchAll(/\(([^)]*)\)/g)].map((a) => {
    const [type = "", , rights = "", , , trustee = ""] = (a[1] ?? "").split(";");
    return { type, rights, trustee };
  });
  return { owner, protectedDacl: (d?.[1] ?? "").includes("P"), aces };
}

const trusted = (sid: string, user: string | undefined): boolean => PRIVILEGED.has(sid) || sid === user;

/**
 * Why `sddl`'s owner may not hold the agent's state (someone else made the directory), or undefined:
 * SYSTEM, Administrators and the agent's own `user` (a SID) may.
 */
export function stateDirOwnerProblem(sddl: string, user?: string): string | undefined {
  const { owner } = parseSddl(sddl);
  if (owner === undefined) return `has no owner in ${sddl}`;
  return trusted(owner, user) ? undefined : `is owned by ${owner}, not by SYSTEM, Administrators or the agent's user`;
}

/** Why `sddl`'s DACL is not the private one (it inherits, or allows someone else), or undefined. */
export function stateDirDaclProblem(sddl: string, user?: string): string | undefined {
  const { protectedDacl, aces } = parseSddl(sddl);
  if (!protectedDacl) return "inherits its DACL";
  const others = aces.filter((a) => (a.type === "A" || a.type === "OA") && !trusted(a.trustee, user));
  if (others.length > 0) return `allows ${others.map((a) => a.trustee).join(", ")}`;
  if (!aces.some((a) => a.type === "A")) return "allows nobody";
  return undefined;
}
