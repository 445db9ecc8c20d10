/**
 * Who may talk to the broker. On Linux the sockets are mode 0600 in a 0700
 * directory: only the agent's own user (root) connects. On Windows the pipes must
 * admit only Administrators and SYSTEM — wins's descriptor. Node (libuv) creates a
 * pipe with the default descriptor (others may read, not write), so once a pipe
 * listens the broker sets wins's DACL on it and reads it back
 * ({@link renderPipeAclApply}, run by pipe-acl.win32.ts), and refuses to serve a
 * pipe whose DACL lets anyone else write.
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

/** The line {@link renderPipeAclApply} prints the pipe's DACL on, read back after setting it. */
export const PIPE_DACL_LINE = "winfleet-pipe-dacl: ";

// Win32 calls PowerShell makes (compiled by Add-Type): set a named object's DACL, read it back as SDDL.
const PIPE_SECURITY_TYPE = `[DllImport("advapi32.dll", CharSet = CharSet.Unicode)]
public static extern uint SetNamedSecurityInfoW(string name, int type, uint info, IntPtr owner, IntPtr group, byte[] dacl, IntPtr sacl);
[DllImport("advapi32.dll", CharSet = CharSet.Unicode)]
public static extern uint GetNamedSecurityInfoW(string name, int type, uint info, IntPtr owner, IntPtr group, out IntPtr dacl, IntPtr sacl, out IntPtr sd);
[DllImport("advapi32.dll", CharSet = CharSet.Unicode, SetLastError = true)]
public static extern bool ConvertSecurityDescriptorToStringSecurityDescriptorW(IntPtr sd, uint revision, uint info, out IntPtr text, out uint length);
[DllImport("kernel32.dll")]
public static extern IntPtr LocalFree(IntPtr memory);`;

/**
 * PowerShell that gives `pipe` the DACL `sddl` (protected: nothing inherited) and prints the DACL it
 * then has, as SDDL, on a line starting {@link PIPE_DACL_LINE}. SetNamedSecurityInfo on
 * `\\.\pipe\<name>` (SE_FILE_OBJECT) opens the pipe as a client with WRITE_DAC, which the default
 * pipe descriptor grants the pipe's creator (SYSTEM) and Administrators; the descriptor belongs to
 * the pipe, so the instances libuv creates later share it.
 */
export function renderPipeAclApply(pipe: string, sddl = PIPE_SDDL): string {
  const literal = `'${pipe.replace(/'/g, "''")}'`;
  return [
    "$ErrorActionPreference = 'Stop'",
    `Add-Type -Namespace Winfleet -Name PipeSecurity -MemberDefinition @'\n${PIPE_SECURITY_TYPE}\n'@`,
    `$pipe = ${literal}`,
    `$raw = New-Object System.Security.AccessControl.RawSecurityDescriptor '${sddl.replace(/'/g, "''")}'`,
    "$dacl = New-Object byte[] $raw.DiscretionaryAcl.BinaryLength",
    "$raw.DiscretionaryAcl.GetBinaryForm($dacl, 0)",
    "# DACL_SECURITY_INFORMATION (4) | PROTECTED_DACL_SECURITY_INFORMATION (0x80000000); 1 is SE_FILE_OBJECT.",
    "$rc = [Winfleet.PipeSecurity]::SetNamedSecurityInfoW($pipe, 1, [uint32]2147483652, [IntPtr]::Zero, [IntPtr]::Zero, $dacl, [IntPtr]::Zero)",
    'if ($rc -ne 0) { throw "cannot set the DACL of ${pipe}: Win32 error $rc" }',
    "$daclPointer = [IntPtr]::Zero",
    "$sd = [IntPtr]::Zero",
    "$rc = [Winfleet.PipeSecurity]::GetNamedSecurityInfoW($pipe, 1, 4, [IntPtr]::Zero, [IntPtr]::Zero, [ref]$daclPointer, [IntPtr]::Zero, [ref]$sd)",
    'if ($rc -ne 0) { throw "cannot read the DACL of ${pipe} back: Win32 error $rc" }',
    "$text = [IntPtr]::Zero",
    "$length = [uint32]0",
    "if (-not [Winfleet.PipeSecurity]::ConvertSecurityDescriptorToStringSecurityDescriptorW($sd, 1, 4, [ref]$text, [ref]$length)) {",
    '    throw "cannot render the DACL of ${pipe}: Win32 error $([Runtime.InteropServices.Marshal]::GetLastWin32Error())"',
    "}",
    `'${PIPE_DACL_LINE}' + [Runtime.InteropServices.Marshal]::PtrToStringUni($text)`,
    "[void][Winfleet.PipeSecurity]::LocalFree($text)",
    "[void][Winfleet.PipeSecurity]::LocalFree($sd)",
  ].join("\n");
}

/** Trustees that may hold write access to a broker pipe: Administrators and SYSTEM, by alias or SID. */
const PIPE_TRUSTEES = new Set(["BA", "SY", "S-1-5-32-544", "S-1-5-18"]);

/**
 * Why a pipe's DACL (as SDDL, read back from the pipe) is not wins's, or undefined when it is:
 * protected (nothing inherited), and allowing access to Administrators and SYSTEM only. Windows
 * may write the rights back mapped (`FA` for `GA`); only who is allowed counts here.
 */
export function pipeDaclProblem(sddl: string): string | undefined {
  let dacl: ReturnType<typeof parseDacl>;
  try {
    dacl = parseDacl(sddl.trim());
  } catch {
    return `not a DACL: ${sddl}`;
  }
  if (!dacl.protectedDacl) return `the DACL is not protected (it inherits): ${sddl}`;
  const allowed = dacl.aces.filter((a) => a.type === "A" || a.type === "OA");
  if (allowed.length === 0) return `the DACL allows nobody: ${sddl}`;
  const others = allowed.filter((a) => !PIPE_TRUSTEES.has(a.trustee));
  if (others.length > 0) return `the DACL also allows ${others.map((a) => a.trustee).join(", ")}: ${sddl}`;
  return undefined;
}
