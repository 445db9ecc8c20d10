/**
 * What the CustomScriptExtension runs (`protectedSettings.commandToExecute`):
 * PowerShell that reads the bootstrap from the VM's userData (IMDS), refuses it
 * unless its SHA-256 is the one rendered here, and runs it with the node's
 * secret variables (the join token and the stack's content secrets, as one
 * JSON object) and a content SAS, when blobs are read with one. It is passed as
 * `-EncodedCommand`, so cmd.exe quoting never touches it, and only ever as a
 * protected setting: the secrets are inside. `commandToExecute` is limited to
 * about 8 KiB, which is why the bootstrap itself travels as userData.
 */

/** Where IMDS serves the VM's userData (base64), as text. */
export const USER_DATA_URL = "http://169.254.169.254/metadata/instance/compute/userData?api-version=2021-01-01&format=text";
/** The extension's command length limit. */
export const COMMAND_LIMIT = 8191;

const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** The PowerShell the extension runs (tested as data and parsed). */
export function extensionScript(bootstrapSha256: string, secretsLine: string, contentSas?: string): string {
  if (/[\r\n\0]/.test(secretsLine) || (contentSas !== undefined && /[\r\n\0]/.test(contentSas))) throw new Error("the secrets and the SAS must be single-line values");
  const sas = contentSas !== undefined ? ` -ContentSas ${q(contentSas)}` : "";
  return `$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$dir = Join-Path $env:SystemDrive 'AzureData\\winfleet'
New-Item -ItemType Directory -Force -Path $dir | Out-Null
$encoded = Invoke-RestMethod -UseBasicParsing -Headers @{ Metadata = 'true' } -Uri ${q(USER_DATA_URL)}
$bytes = [Convert]::FromBase64String($encoded)
$sha = [System.Security.Cryptography.SHA256]::Create()
$actual = -join ($sha.ComputeHash($bytes) | ForEach-Object { $_.ToString('x2') })
if ($actual -ne ${q(bootstrapSha256)}) { throw "the bootstrap in userData has SHA-256 $actual, expected ${bootstrapSha256}" }
$script = Join-Path $dir 'bootstrap.ps1'
[System.IO.File]::WriteAllBytes($script, $bytes)
try {
    & $script -Secrets ${q(secretsLine)}${sas}
}
catch {
    Write-Error $_
    exit 1
}
exit 0
`;
}

/** `commandToExecute`: the script above as an encoded command (UTF-16LE, base64). */
export function extensionCommand(bootstrapSha256: string, secretsLine: string, contentSas?: string): string {
  const encoded = Buffer.from(extensionScript(bootstrapSha256, secretsLine, contentSas), "utf16le").toString("base64");
  const command = `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -EncodedCommand ${encoded}`;
  if (command.length > COMMAND_LIMIT) {
    // Encoded as UTF-16 then base64, each character of a secret takes about 2.7 characters here.
    throw new Error(`commandToExecute would be ${command.length} characters (the secrets are ${secretsLine.length}); the extension takes at most ${COMMAND_LIMIT}: keep large values such as kubeconfigs out of content.secrets`);
  }
  return command;
}
