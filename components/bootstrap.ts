/**
 * The node bootstrap: PowerShell that installs the Node runtime, the agent
 * bundle and the content bundle (each SHA-256 verified before it is used),
 * writes the agent config (`agent/service/config.ts`'s shape), and registers
 * and starts the agent. Pure and deterministic; safe to re-run (every step
 * checks before it acts). It carries no secret: the secret variables (the join
 * token under KUBE_BOOTSTRAP_TOKEN or RKE2_TOKEN, and the stack's
 * `content.secrets`) arrive as one JSON object, in the `-Secrets` argument (the
 * Azure extension passes it from `protectedSettings`) or as a line on standard
 * input (`-SecretsFromStdin`, the SSH path), and a content SAS as
 * `-ContentSas`. They go only into the agent config's `secrets`, which only
 * SYSTEM and Administrators can read.
 */
import { createHash } from "node:crypto";
import { WINDOWS_INSTALL_DIR, canonicalJson } from "../agent/common";
import type { NodeRuntime } from "./node-runtime";

/** A hash-pinned download. */
export interface PinnedArtifact {
  readonly url: string;
  readonly sha256: string;
}

/** Where the content bundle (a .tar.gz) comes from. */
export type ContentSource =
  | (PinnedArtifact & { readonly kind: "url"; readonly auth: "none" | "managedIdentity" | "sas" })
  /** Already on the host (copied over SSH), verified all the same. */
  | { readonly kind: "file"; readonly path: string; readonly sha256: string };

/** Inputs of {@link renderBootstrap}. */
export interface BootstrapArgs {
  readonly node: NodeRuntime;
  /** `auth: managedIdentity` when the bundle is on the storage account the node reads its content from with its identity. */
  readonly agent: PinnedArtifact & { readonly version: string; readonly auth?: "none" | "managedIdentity" };
  readonly content: ContentSource;
  /** The non-secret agent config (template, versions, variables, broker…); `content` and `secrets` are filled in on the host. */
  readonly agentConfig: Readonly<Record<string, unknown>>;
  /**
   * The secret variables the node must be given (the join token's KUBE_BOOTSTRAP_TOKEN or
   * RKE2_TOKEN, and the stack's content secrets): the bootstrap refuses to run without any of them.
   */
  readonly secretVariables: readonly string[];
  /** The resource id of the user-assigned identity to ask IMDS for storage tokens with (a VM may carry several). */
  readonly identity?: string;
  /** @default "C:\\ProgramData\\winfleet" */
  readonly installDir?: string;
}

/** The scheduled task the agent runs as; `up --manager windows` restarts it. */
export const AGENT_TASK = "winfleet-agent";
/** Where the bootstrap installs the agent. */
export const DEFAULT_INSTALL_DIR = WINDOWS_INSTALL_DIR;

const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/**
 * PowerShell that registers the agent's scheduled task (at boot, as SYSTEM,
 * restarted when it fails) and starts it, restarting it when `$changed`. It
 * expects `$node`, `$current` (the `current` junction) and `$configPath` set.
 * One text for the bootstrap and for a release's
 * `service/register-winfleet-agent.ps1`, so both register the same task.
 */
export function agentTaskRegistration(): string {
  return `# The agent runs at boot as SYSTEM. Task Scheduler's restart-on-failure only retries a failure
# to start, so a second trigger fires every minute: an agent that exited is started again, and
# one that runs is left alone (IgnoreNew).
$action = New-ScheduledTaskAction -Execute $node -Argument ('"' + "$current\\bin\\winfleet-agent.js" + '" serve --config "' + $configPath + '"')
$atStartup = New-ScheduledTaskTrigger -AtStartup
$watchdog = New-ScheduledTaskTrigger -Once -At ([DateTime]::Today) -RepetitionInterval (New-TimeSpan -Minutes 1)
$settings = New-ScheduledTaskSettingsSet -RestartCount 999 -RestartInterval (New-TimeSpan -Minutes 1) -ExecutionTimeLimit ([TimeSpan]::Zero) -StartWhenAvailable -MultipleInstances IgnoreNew
$principal = New-ScheduledTaskPrincipal -UserId 'SYSTEM' -LogonType ServiceAccount -RunLevel Highest
Register-ScheduledTask -TaskName ${q(AGENT_TASK)} -Action $action -Trigger @($atStartup, $watchdog) -Settings $settings -Principal $principal -Force | Out-Null
$task = Get-ScheduledTask -TaskName ${q(AGENT_TASK)}
if ($changed -and $task.State -eq 'Running') { Stop-ScheduledTask -TaskName ${q(AGENT_TASK)} }
if ((Get-ScheduledTask -TaskName ${q(AGENT_TASK)}).State -ne 'Running') { Start-ScheduledTask -TaskName ${q(AGENT_TASK)} }
`;
}

/**
 * A release's Windows service file: registers the agent unpacked under
 * `<InstallDir>\\releases\\<version>` (with `current` pointing at it, as the
 * bootstrap lays it out) with the task the bootstrap registers.
 */
export function renderTaskRegistrationScript(nodeExe: string): string {
  return `# Registers the winfleet agent as the scheduled task the node bootstrap registers (at boot, as
# SYSTEM, restarted when it fails) and starts it. Expects the layout the bootstrap makes: the
# agent bundle unpacked under <InstallDir>\\releases\\<version>, <InstallDir>\\current pointing at it,
# the Node runtime of node-runtime.json under <InstallDir>\\node, and the agent config.
param(
    [string]$InstallDir = ${q(DEFAULT_INSTALL_DIR)},
    [string]$NodePath = '',
    [string]$Config = ''
)
$ErrorActionPreference = 'Stop'
$node = if ($NodePath) { $NodePath } else { Join-Path "$InstallDir\\node" ${q(nodeExe)} }
$current = "$InstallDir\\current"
$configPath = if ($Config) { $Config } else { "$InstallDir\\agent.json" }
$changed = $true
foreach ($path in @($node, "$current\\bin\\winfleet-agent.js", $configPath)) {
    if (-not (Test-Path -LiteralPath $path)) { throw "$path does not exist: see the comment at the top of this script" }
}
${agentTaskRegistration()}Write-Output "winfleet agent registered as the scheduled task ${AGENT_TASK}"
`;
}

function contentStep(c: ContentSource): string {
  const file = `"$root\\downloads\\content-${c.sha256.slice(0, 12)}.tgz"`;
  if (c.kind === "file") {
    return `Assert-Pinned -Path ${q(c.path)} -ExpectedHash ${q(c.sha256.toUpperCase())}
Copy-Item -Force -LiteralPath ${q(c.path)} -Destination ${file}`;
  }
  if (c.auth === "sas") {
    return `if (-not $ContentSas) { throw 'this node reads its content with a SAS: pass -ContentSas' }
Get-Pinned -Url (${q(c.url)} + '?' + $ContentSas.TrimStart('?')) -ExpectedHash ${q(c.sha256.toUpperCase())} -Path ${file}`;
  }
  const headers = c.auth === "managedIdentity" ? " -Headers (Get-StorageHeaders)" : "";
  return `Get-Pinned -Url ${q(c.url)} -ExpectedHash ${q(c.sha256.toUpperCase())} -Path ${file}${headers}`;
}

/** The bootstrap script. */
export function renderBootstrap(args: BootstrapArgs): string {
  if (args.secretVariables.length === 0) throw new Error("a bootstrap needs at least the join token's secret variable");
  const dir = args.installDir ?? DEFAULT_INSTALL_DIR;
  const config = canonicalJson(args.agentConfig);
  const contentDir = `"$root\\content\\${args.content.sha256.slice(0, 12)}"`;
  return `# winfleet bootstrap: idempotent, safe to re-run. Generated; do not edit.
param(
    [string]$Secrets,
    [switch]$SecretsFromStdin,
    [string]$ContentSas
)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Net.ServicePointManager]::SecurityProtocol = [Net.SecurityProtocolType]::Tls12
$root = ${q(dir)}
if ($SecretsFromStdin) { $Secrets = [Console]::In.ReadLine() }
if (-not $Secrets) { throw 'the secrets are missing: pass -Secrets or -SecretsFromStdin (a JSON object)' }
$secretValues = $Secrets | ConvertFrom-Json
foreach ($name in @(${[...args.secretVariables].sort().map(q).join(", ")})) {
    if (-not $secretValues.$name) { throw "the secret variable $name is missing from -Secrets" }
}

function Assert-Pinned([string]$Path, [string]$ExpectedHash) {
    $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $Path).Hash
    if ($actual -ne $ExpectedHash) { throw "SHA-256 of $Path is $actual, expected $ExpectedHash" }
}

function Get-Pinned([string]$Url, [string]$ExpectedHash, [string]$Path, [hashtable]$Headers = @{}) {
    if ((Test-Path -LiteralPath $Path) -and ((Get-FileHash -Algorithm SHA256 -LiteralPath $Path).Hash -eq $ExpectedHash)) { return }
    # Messages name the URL without its query: a SAS must not reach the extension's status.
    $shown = ($Url -split '\\?')[0]
    $partial = "$Path.partial"
    for ($attempt = 1; ; $attempt++) {
        try {
            Invoke-WebRequest -UseBasicParsing -Uri $Url -Headers $Headers -OutFile $partial
            break
        }
        catch {
            $reason = $_.Exception.Message.Replace($Url, $shown)
            if ($attempt -ge 5) { throw "downloading $shown failed $attempt times; the last: $reason" }
            Write-Output "downloading $shown failed ($reason); trying again in $([math]::Pow(2, $attempt)) s"
            Start-Sleep -Seconds ([math]::Pow(2, $attempt))
        }
    }
    $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $partial).Hash
    if ($actual -ne $ExpectedHash) {
        Remove-Item -Force -LiteralPath $partial
        throw "SHA-256 of $shown is $actual, expected $ExpectedHash"
    }
    Move-Item -Force -LiteralPath $partial -Destination $Path
}

# A token for Azure Storage from the VM's managed identity (IMDS).
function Get-StorageHeaders {
    $imds = 'http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F${args.identity ? `&msi_res_id=${encodeURIComponent(args.identity).replace(/'/g, "%27")}` : ""}'
    $token = Invoke-RestMethod -UseBasicParsing -Headers @{ Metadata = 'true' } -Uri $imds
    return @{ Authorization = "Bearer $($token.access_token)"; 'x-ms-version' = '2021-08-06' }
}

function Expand-Once([string]$Archive, [string]$Destination) {
    if (Test-Path -LiteralPath (Join-Path $Destination '.complete')) { return }
    if (Test-Path -LiteralPath $Destination) { Remove-Item -Recurse -Force -LiteralPath $Destination }
    New-Item -ItemType Directory -Force -Path $Destination | Out-Null
    & tar.exe -xzf $Archive -C $Destination
    if ($LASTEXITCODE -ne 0) { throw "tar could not extract $Archive ($LASTEXITCODE)" }
    New-Item -ItemType File -Path (Join-Path $Destination '.complete') | Out-Null
}

foreach ($d in @($root, "$root\\downloads", "$root\\releases", "$root\\content")) { New-Item -ItemType Directory -Force -Path $d | Out-Null }
# Only SYSTEM and Administrators may read what follows (the agent config holds the join token);
# named by SID, which every display language shares.
& icacls.exe $root /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F' | Out-Null
if ($LASTEXITCODE -ne 0) { throw "icacls failed ($LASTEXITCODE)" }

Get-Pinned -Url ${q(args.node.url)} -ExpectedHash ${q(args.node.sha256.toUpperCase())} -Path "$root\\downloads\\node-${args.node.sha256.slice(0, 12)}.tgz"
Expand-Once -Archive "$root\\downloads\\node-${args.node.sha256.slice(0, 12)}.tgz" -Destination "$root\\node"
$node = Join-Path "$root\\node" ${q(args.node.exe)}

Get-Pinned -Url ${q(args.agent.url)} -ExpectedHash ${q(args.agent.sha256.toUpperCase())} -Path "$root\\downloads\\agent-${args.agent.version}.tgz"${args.agent.auth === "managedIdentity" ? " -Headers (Get-StorageHeaders)" : ""}
Expand-Once -Archive "$root\\downloads\\agent-${args.agent.version}.tgz" -Destination "$root\\releases\\${args.agent.version}"
$current = "$root\\current"
$target = "$root\\releases\\${args.agent.version}"
if (-not (Test-Path -LiteralPath $current) -or ((Get-Item -LiteralPath $current).Target -ne $target)) {
    if (Test-Path -LiteralPath $current) { (Get-Item -LiteralPath $current).Delete() }
    New-Item -ItemType Junction -Path $current -Target $target | Out-Null
}

${contentStep(args.content)}
Expand-Once -Archive "$root\\downloads\\content-${args.content.sha256.slice(0, 12)}.tgz" -Destination ${contentDir}

$config = ${q(config)} | ConvertFrom-Json
$config | Add-Member -NotePropertyName content -NotePropertyValue ${contentDir} -Force
$config | Add-Member -NotePropertyName secrets -NotePropertyValue $secretValues -Force
$json = $config | ConvertTo-Json -Depth 20
$configPath = "$root\\agent.json"
$changed = $false
# Written and compared byte for byte (UTF-8, no BOM, no added newline): a re-run with the same
# config leaves the running agent alone.
if (-not (Test-Path -LiteralPath $configPath) -or -not ([IO.File]::ReadAllText($configPath) -ceq $json)) {
    [IO.File]::WriteAllText("$configPath.partial", $json, (New-Object System.Text.UTF8Encoding -ArgumentList $false))
    Move-Item -Force -LiteralPath "$configPath.partial" -Destination $configPath
    $changed = $true
}

${agentTaskRegistration()}Write-Output "winfleet agent ${args.agent.version} bootstrapped"
`;
}

/** SHA-256 of the script: ties the extension's forceUpdateTag and re-runs to its content. */
export function bootstrapHash(script: string): string {
  return createHash("sha256").update(script).digest("hex");
}
