/**
 * The node bootstrap: PowerShell that installs the Node runtime, the agent bundle
 * and the content bundle (each SHA-256 verified before use), writes the agent
 * config, and registers and starts the agent. Pure and deterministic; safe to
 * re-run (every step checks before it acts). It carries no secret: the join
 * token arrives as the `-JoinToken` argument, which the Azure extension passes
 * from `protectedSettings` and the SSH path passes on the command line.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../agent/common/canonical-json";
import type { NodeRuntime } from "./node-runtime";

/** A hash-pinned download. */
export interface PinnedArtifact {
  readonly url: string;
  readonly sha256: string;
}

/** Inputs of {@link renderBootstrap}. */
export interface BootstrapArgs {
  readonly node: NodeRuntime;
  readonly agent: PinnedArtifact & { readonly version: string };
  readonly content: PinnedArtifact;
  /** Non-secret agent configuration, written to `<installDir>\agent.json`. */
  readonly agentConfig: Readonly<Record<string, unknown>>;
  /** @default "C:\\ProgramData\\winfleet" */
  readonly installDir?: string;
}

const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** The bootstrap script. */
export function renderBootstrap(args: BootstrapArgs): string {
  const dir = args.installDir ?? "C:\\ProgramData\\winfleet";
  const config = canonicalJson(args.agentConfig);
  return `# winfleet bootstrap: idempotent, safe to re-run. Generated; do not edit.
param([Parameter(Mandatory = $true)][string]$JoinToken)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Net.ServicePointManager]::SecurityProtocol = [Net.SecurityProtocolType]::Tls12
$root = ${q(dir)}

function Get-Pinned([string]$Url, [string]$Sha256, [string]$Path) {
    if ((Test-Path -LiteralPath $Path) -and ((Get-FileHash -Algorithm SHA256 -LiteralPath $Path).Hash -eq $Sha256)) { return }
    $partial = "$Path.partial"
    Invoke-WebRequest -UseBasicParsing -Uri $Url -OutFile $partial
    $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $partial).Hash
    if ($actual -ne $Sha256) {
        Remove-Item -Force -LiteralPath $partial
        throw "SHA-256 of $Url is $actual, expected $Sha256"
    }
    Move-Item -Force -LiteralPath $partial -Destination $Path
}

function Expand-Once([string]$Archive, [string]$Destination) {
    if (Test-Path -LiteralPath (Join-Path $Destination '.complete')) { return }
    if (Test-Path -LiteralPath $Destination) { Remove-Item -Recurse -Force -LiteralPath $Destination }
    New-Item -ItemType Directory -Force -Path $Destination | Out-Null
    & tar.exe -xzf $Archive -C $Destination
    if ($LASTEXITCODE -ne 0) { throw "tar could not extract $Archive ($LASTEXITCODE)" }
    New-Item -ItemType File -Path (Join-Path $Destination '.complete') | Out-Null
}

foreach ($d in @($root, "$root\\downloads", "$root\\releases")) { New-Item -ItemType Directory -Force -Path $d | Out-Null }
# Only SYSTEM and Administrators may read what follows (the config holds the join token).
& icacls.exe $root /inheritance:r /grant:r 'SYSTEM:(OI)(CI)F' 'Administrators:(OI)(CI)F' | Out-Null
if ($LASTEXITCODE -ne 0) { throw "icacls failed ($LASTEXITCODE)" }

Get-Pinned -Url ${q(args.node.url)} -Sha256 ${q(args.node.sha256.toUpperCase())} -Path "$root\\downloads\\node-${args.node.sha256.slice(0, 12)}.tgz"
Expand-Once -Archive "$root\\downloads\\node-${args.node.sha256.slice(0, 12)}.tgz" -Destination "$root\\node"
$node = Join-Path "$root\\node" ${q(args.node.exe)}

Get-Pinned -Url ${q(args.agent.url)} -Sha256 ${q(args.agent.sha256.toUpperCase())} -Path "$root\\downloads\\agent-${args.agent.version}.tgz"
Expand-Once -Archive "$root\\downloads\\agent-${args.agent.version}.tgz" -Destination "$root\\releases\\${args.agent.version}"
$current = "$root\\current"
$target = "$root\\releases\\${args.agent.version}"
if (-not (Test-Path -LiteralPath $current) -or ((Get-Item -LiteralPath $current).Target -ne $target)) {
    if (Test-Path -LiteralPath $current) { (Get-Item -LiteralPath $current).Delete() }
    New-Item -ItemType Junction -Path $current -Target $target | Out-Null
}

Get-Pinned -Url ${q(args.content.url)} -Sha256 ${q(args.content.sha256.toUpperCase())} -Path "$root\\downloads\\content-${args.content.sha256.slice(0, 12)}.tgz"
Expand-Once -Archive "$root\\downloads\\content-${args.content.sha256.slice(0, 12)}.tgz" -Destination "$root\\content\\${args.content.sha256.slice(0, 12)}"

$config = ${q(config)} | ConvertFrom-Json
$config | Add-Member -NotePropertyName joinToken -NotePropertyValue $JoinToken -Force
$config | Add-Member -NotePropertyName content -NotePropertyValue "$root\\content\\${args.content.sha256.slice(0, 12)}" -Force
$json = $config | ConvertTo-Json -Depth 20
$configPath = "$root\\agent.json"
if (-not (Test-Path -LiteralPath $configPath) -or ((Get-Content -Raw -LiteralPath $configPath) -ne $json)) {
    Set-Content -LiteralPath "$configPath.partial" -Value $json -Encoding utf8
    Move-Item -Force -LiteralPath "$configPath.partial" -Destination $configPath
    $changed = $true
}

# The agent runs at boot as SYSTEM and is restarted when it fails.
$action = New-ScheduledTaskAction -Execute $node -Argument ('"' + "$current\\bin\\winfleet-agent.js" + '" serve --config "' + $configPath + '"')
$trigger = New-ScheduledTaskTrigger -AtStartup
$settings = New-ScheduledTaskSettingsSet -RestartCount 999 -RestartInterval (New-TimeSpan -Minutes 1) -ExecutionTimeLimit ([TimeSpan]::Zero) -StartWhenAvailable
$principal = New-ScheduledTaskPrincipal -UserId 'SYSTEM' -LogonType ServiceAccount -RunLevel Highest
Register-ScheduledTask -TaskName 'winfleet-agent' -Action $action -Trigger $trigger -Settings $settings -Principal $principal -Force | Out-Null
$task = Get-ScheduledTask -TaskName 'winfleet-agent'
if ($changed -and $task.State -eq 'Running') { Stop-ScheduledTask -TaskName 'winfleet-agent' }
if ((Get-ScheduledTask -TaskName 'winfleet-agent').State -ne 'Running') { Start-ScheduledTask -TaskName 'winfleet-agent' }
Write-Output "winfleet agent ${args.agent.version} bootstrapped"
`;
}

/** SHA-256 of the script: ties the extension's forceUpdateTag and re-runs to its content. */
export function bootstrapHash(script: string): string {
  return createHash("sha256").update(script).digest("hex");
}
