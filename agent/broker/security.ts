/**
 * Who may talk to the broker. On Linux the sockets are mode 0600 in a 0700
 * directory: only the agent's own user (root) connects. On Windows the pipes must
 * admit only Administrators and SYSTEM — wins's descriptor, which this renders
 * and checks; the check is PowerShell run at service start on the host.
 */

/** The SDDL wins gave its pipe: protected DACL, generic-all for BUILTIN\Administrators (BA) and LocalSystem (SY). */
export const PIPE_SDDL = "D:P(A;;GA;;;BA)(A;;GA;;;SY)";

/** The access entries an SDDL DACL grants, as [right, trustee] pairs (enough to test ours as data). */
export function parseDacl(sddl: string): {
  protectedDacl: boolean;
  aces: { type: string; rights: string; trustee: string }[];
} {
  const m = /^D:(P?)((?:\([^)]*\))*)$/.exec(sddl);
  if (!m) throw new Error(`not a DACL-only SDDL: ${sddl}`);
  const aces = [...(m[2] ?? "").matchAll(/\(([^)]*)\)/g)].map((a) => {
    const [type = "", , rights = "", , , trustee = ""] = (a[1] ?? "").split(";");
    return { type, rights, trustee };
  });
  return { protectedDacl: m[1] === "P", aces };
}

/**
 * PowerShell that fails unless `pipe`'s DACL grants access to nobody but
 * Administrators and SYSTEM (read-only entries for others, as the default pipe
 * DACL has, are reported too: they let nobody send a request).
 */
export function renderPipeAclCheck(pipe: string): string {
  const literal = `'${pipe.replace(/'/g, "''")}'`;
  return [
    "$ErrorActionPreference = 'Stop'",
    `$sd = (Get-Acl -LiteralPath ${literal}).Sddl`,
    "$allowed = @('S-1-5-32-544', 'S-1-5-18', 'BA', 'SY')",
    "$writers = ([System.Security.AccessControl.RawSecurityDescriptor]::new($sd)).DiscretionaryAcl |",
    "  Where-Object { $_.AceType -eq 'AccessAllowed' -and ($_.AccessMask -band 0x40000002) -ne 0 }",
    "$bad = $writers | Where-Object { $allowed -notcontains $_.SecurityIdentifier.Value }",
    `if ($bad) { throw "pipe ${pipe.replace(/"/g, '`"')} grants write access to: $($bad.SecurityIdentifier -join ', ')" }`,
  ].join("\n");
}
