/**
 * What the CustomScriptExtension runs (`protectedSettings.commandToExecute`):
 * PowerShell that reads the bootstrap from the VM's userData (IMDS), refuses it
 * unless its epoch (its SHA-256 with the target line neutral: bootstrap.ts) is
 * the one rendered here, and runs those checked bytes (a script block, not the
 * copy it leaves on disk, which another local user could swap) with the node's
 * small secret variables (the join token, as a JSON object), a content SAS
 * when blobs are read with one, and the version of the Key Vault secret that
 * holds the larger ones (kubeconfigs and tokens, which would not fit). It travels as
 * base64 of its UTF-8 (no character cmd.exe or PowerShell quoting could touch)
 * that a one-line `-Command` decodes and runs, and only ever as a protected
 * setting: the secrets are inside. `commandToExecute` is limited to about
 * 8 KiB, which is why the bootstrap itself travels as userData, and why not
 * `-EncodedCommand`: its UTF-16 doubles every character, which left room for
 * little more than 2 KB of secrets, less than a kubeconfig.
 *
 * It pins the epoch, not the whole script, so that a new agent or template
 * version (which changes only the userData's target line, what a new machine
 * installs first) leaves this command, and so the extension, as it is: a
 * running machine's versions move through the upgrader alone.
 */
import { TARGET_LINE } from "./bootstrap";

/** Where IMDS serves the VM's userData (base64), as text. */
export const USER_DATA_URL =
  "http://169.254.169.254/metadata/instance/compute/userData?api-version=2021-01-01&format=text";
/** The extension's command length limit. */
export const COMMAND_LIMIT = 8191;

const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** The PowerShell the extension runs (tested as data and parsed). */
export function extensionScript(
  bootstrapEpoch: string,
  secretsLine: string,
  contentSas?: string,
  secretsVersion?: string,
): string {
  if (/[\r\n\0]/.test(secretsLine) || (contentSas !== undefined && /[\r\n\0]/.test(contentSas)))
    throw new Error("the secrets and the SAS must be single-line values");
  if (secretsVersion !== undefined && !/^[0-9a-f]{32}$/.test(secretsVersion))
    throw new Error(`${secretsVersion} is not a Key Vault secret version (32 hex digits)`);
  const sas = `${contentSas !== undefined ? ` -ContentSas ${q(contentSas)}` : ""}${secretsVersion !== undefined ? ` -SecretsVersion ${q(secretsVersion)}` : ""}`;
  return `$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$dir = Join-Path $env:SystemDrive 'AzureData\\winfleet'
New-Item -ItemType Directory -Force -Path $dir | Out-Null
$encoded = Invoke-RestMethod -UseBasicParsing -Headers @{ Metadata = 'true' } -Uri ${q(USER_DATA_URL)}
$bytes = [Convert]::FromBase64String($encoded)
# The pin leaves out the target line (the versions a new machine installs first), as bootstrapEpoch does.
$neutral = ([regex]${q(`(?m)${TARGET_LINE.pattern}`)}).Replace([Text.Encoding]::UTF8.GetString($bytes), ${q(TARGET_LINE.render(undefined).replace(/\$/g, "$$$$"))}, 1)
$sha = [System.Security.Cryptography.SHA256]::Create()
$actual = -join ($sha.ComputeHash([Text.Encoding]::UTF8.GetBytes($neutral)) | ForEach-Object { $_.ToString('x2') })
if ($actual -ne ${q(bootstrapEpoch)}) { throw "the bootstrap in userData has epoch $actual, expected ${bootstrapEpoch}" }
# A copy to read; what runs is the bytes just checked, never a file that could change before it ran.
[System.IO.File]::WriteAllBytes((Join-Path $dir 'bootstrap.ps1'), $bytes)
$script = [scriptblock]::Create([Text.Encoding]::UTF8.GetString($bytes))
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

/** `commandToExecute`: the script above, base64 of its UTF-8, decoded and run by a one-line `-Command`. */
export function extensionCommand(
  bootstrapEpoch: string,
  secretsLine: string,
  contentSas?: string,
  secretsVersion?: string,
): string {
  const encoded = Buffer.from(
    extensionScript(bootstrapEpoch, secretsLine, contentSas, secretsVersion),
    "utf8",
  ).toString("base64");
  const command = `powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "& ([scriptblock]::Create([Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('${encoded}'))))"`;
  if (command.length > COMMAND_LIMIT) {
    // Base64 of UTF-8: each character of a secret takes about 1.33 characters here.
    throw new Error(
      `commandToExecute would be ${command.length} characters (the secrets are ${secretsLine.length}); the extension takes at most ${COMMAND_LIMIT}: only the join token belongs here, larger secrets travel through the Key Vault secret`,
    );
  }
  return command;
}

/** The script a {@link extensionCommand} runs, decoded (for tests and for reading a rendered command). */
export function decodeExtensionCommand(command: string): string {
  const encoded = /FromBase64String\('([A-Za-z0-9+/=]+)'\)/.exec(command)?.[1];
  if (encoded === undefined) throw new Error("not an extension command: no base64 script in it");
  return Buffer.from(encoded, "base64").toString("utf8");
}
