/**
 * What a bring-your-own host is sent over SSH, per platform, as pure functions: where the
 * content archive and the bootstrap are copied (SFTP paths), the command that runs the
 * bootstrap (its secrets on standard input, never on a command line), and the command that
 * removes winfleet from the host when it leaves the stack. Windows: Windows' OpenSSH server,
 * PowerShell (cmd.exe or PowerShell as the login shell both run these). POSIX: the sandbox
 * template's twin, sh in the SSH user's home.
 */
import { DEFAULT_INSTALL_DIR } from "./bootstrap";
import { renderPosixUninstall } from "./bootstrap-posix";

/** A host's platform. */
export type ByoPlatform = "windows" | "posix";

/** The paths and commands of one platform. */
export interface ByoCommands {
  /** Makes the upload directory, open to no one but the administrators (or the SSH user), before anything lands. */
  readonly prepare: string;
  /** Where SFTP writes the content archive. */
  readonly contentRemotePath: string;
  /** Where the bootstrap reads it (the same file, as the host's shell names it). */
  readonly contentPath: string;
  /** Where SFTP writes the bootstrap. */
  readonly bootstrapRemotePath: string;
  /** Runs the bootstrap, reading the secrets line from standard input. */
  readonly run: string;
  /** Stops the agent, uninstalls its content and removes the install directory (the stack deletes the Node). */
  readonly uninstall: string;
}

/** Where uploads land on a Windows host. */
export const UPLOAD_DIR = `${DEFAULT_INSTALL_DIR}\\upload`;
const POWERSHELL = "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass";

/** icacls arguments that leave the upload directory (and anything in it) to SYSTEM and Administrators. */
export const UPLOAD_ACL = [
  "/setowner '*S-1-5-32-544'",
  "/inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F'",
] as const;

/**
 * The upload directory made and restricted, before anything is written there: ProgramData hands
 * Users create rights, so a local user could otherwise place (or swap) the bootstrap an
 * administrator runs next. Owner and ACL are set on the directory and whatever is already in it.
 */
export function uploadDirScript(): string {
  const acl = UPLOAD_ACL.map(
    (a) => `icacls.exe '${UPLOAD_DIR}' ${a} /T /C /Q | Out-Null\nif ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE }`,
  );
  return `New-Item -ItemType Directory -Force -Path '${UPLOAD_DIR}' | Out-Null\n${acl.join("\n")}\nexit 0`;
}

/** What removing a Windows host runs (PowerShell): what stays on the host is listed in docs/deploying.md. */
export function windowsUninstallScript(nodeExe: string): string {
  const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;
  return `$ErrorActionPreference = 'Stop'
$root = ${q(DEFAULT_INSTALL_DIR)}
$node = Join-Path (Join-Path $root 'node') ${q(nodeExe)}
$agent = Join-Path $root 'current\\bin\\winfleet-agent.js'
$config = Join-Path $root 'agent.json'
if ($null -ne (Get-Service -Name 'winfleet-agent' -ErrorAction SilentlyContinue)) {
    Stop-Service -Name 'winfleet-agent' -Force
    & (Join-Path $env:SystemRoot 'System32\\sc.exe') 'delete' 'winfleet-agent' | Out-Null
}
if ((Test-Path -LiteralPath $node) -and (Test-Path -LiteralPath $agent) -and (Test-Path -LiteralPath $config)) {
    & $node $agent uninstall --config $config
    if ($LASTEXITCODE -ne 0) { throw "winfleet-agent uninstall failed ($LASTEXITCODE)" }
}
if (Test-Path -LiteralPath $root) { Remove-Item -Recurse -Force -LiteralPath $root }
Write-Output "winfleet removed from $env:COMPUTERNAME"
`;
}

/** The paths and commands for a host of `platform`, its content archive being `contentSha256`. */
export function byoCommands(platform: ByoPlatform, contentSha256: string, nodeExe: string): ByoCommands {
  const content = `content-${contentSha256.slice(0, 16)}.tgz`;
  if (platform === "posix")
    return {
      // SFTP and the login shell both start in the user's home: relative paths name the same file.
      prepare: "umask 077 && mkdir -p winfleet/upload && chmod 700 winfleet winfleet/upload",
      contentRemotePath: `winfleet/upload/${content}`,
      contentPath: `winfleet/upload/${content}`,
      bootstrapRemotePath: "winfleet/upload/bootstrap.sh",
      run: "sh winfleet/upload/bootstrap.sh",
      uninstall: renderPosixUninstall(),
    };
  const encoded = Buffer.from(windowsUninstallScript(nodeExe), "utf16le").toString("base64");
  return {
    // Encoded, so neither login shell (cmd.exe or PowerShell) reads its quotes or variables.
    prepare: `${POWERSHELL} -EncodedCommand ${Buffer.from(uploadDirScript(), "utf16le").toString("base64")}`,
    contentRemotePath: `${UPLOAD_DIR}\\${content}`.replace(/\\/g, "/"),
    contentPath: `${UPLOAD_DIR}\\${content}`,
    bootstrapRemotePath: `${UPLOAD_DIR}\\bootstrap.ps1`.replace(/\\/g, "/"),
    run: `${POWERSHELL} -File "${UPLOAD_DIR}\\bootstrap.ps1" -SecretsFromStdin`,
    uninstall: `${POWERSHELL} -EncodedCommand ${encoded}`,
  };
}
