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
 * `-ContentSas`. An Azure pool's larger secrets (kubeconfigs, kube-proxy's
 * token) do not fit the extension's command line: they wait in one Key Vault
 * secret that only the pool's identity may read, which the bootstrap reads with
 * an IMDS token (the version to read passed as `-SecretsVersion`). They go
 * only into the agent config's `secrets`, which only SYSTEM and Administrators
 * can read.
 */
import { createHash } from "node:crypto";
import { WINDOWS_INSTALL_DIR, canonicalJson } from "../agent/common";
import { agentNssmInstall, agentServiceRegistration } from "./agent-service";
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
  /**
   * `auth: managedIdentity` when the bundle is on the storage account the node reads its content from with its
   * identity.
   */
  readonly agent: PinnedArtifact & { readonly version: string; readonly auth?: "none" | "managedIdentity" };
  readonly content: ContentSource;
  /**
   * The non-secret agent config (template, versions, variables, broker…); `content` and `secrets` are filled in on the
   * host.
   */
  readonly agentConfig: Readonly<Record<string, unknown>>;
  /**
   * The secret variables the node must be given (the join token's KUBE_BOOTSTRAP_TOKEN or
   * RKE2_TOKEN, and the stack's content secrets): the bootstrap refuses to run without any of them.
   */
  readonly secretVariables: readonly string[];
  /** The resource id of the user-assigned identity to ask IMDS for tokens with (a VM may carry several). */
  readonly identity?: string;
  /**
   * The Key Vault secret (its URL without a version, `https://<vault>.vault.azure.net/secrets/<name>`)
   * holding, as one JSON object, the secret variables that do not travel in `-Secrets`; read with
   * the identity's token. Its names are among {@link secretVariables}.
   */
  readonly vaultSecret?: string;
  /** @default "C:\\ProgramData\\winfleet" */
  readonly installDir?: string;
  /** Where NSSM is fetched (a stack's mirror); its digest stays pinned. @default AGENT_NSSM.url */
  readonly nssmUrl?: string;
}

/** Where the bootstrap installs the agent. */
export const DEFAULT_INSTALL_DIR = WINDOWS_INSTALL_DIR;

const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** Key Vault's data-plane API version the bootstrap reads secrets with. */
export const KEY_VAULT_API = "7.4";
/** A Key Vault secret URL without a version, as {@link BootstrapArgs.vaultSecret} takes it. */
export const VAULT_SECRET_URL = /^https:\/\/[a-z0-9-]{3,24}\.vault\.azure\.net\/secrets\/[A-Za-z0-9-]{1,127}$/;

// IMDS's token endpoint for one resource, with the identity to use when the machine names one.
function imdsTokenUrl(resource: string, identity: string | undefined): string {
  const id = identity ? `&msi_res_id=${encodeURIComponent(identity).replace(/'/g, "%27")}` : "";
  return `http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent(resource)}${id}`;
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

// Reads the Key Vault secret: the version -SecretsVersion names (checked to be one), the latest without it.
function vaultRead(secretUrl: string): string {
  return `$vaultUrl = ${q(`${secretUrl}?api-version=${KEY_VAULT_API}`)}
if ($SecretsVersion) {
    if ($SecretsVersion -notmatch '^[0-9a-f]{32}$') { throw '-SecretsVersion must be a Key Vault secret version (32 hex digits)' }
    $vaultUrl = ${q(`${secretUrl}/`)} + $SecretsVersion + ${q(`?api-version=${KEY_VAULT_API}`)}
}
foreach ($p in (Get-VaultSecrets -Url $vaultUrl).PSObject.Properties) {
    $secretValues | Add-Member -NotePropertyName $p.Name -NotePropertyValue $p.Value -Force
}
`;
}

/**
 * PowerShell that reads the node's Key Vault secret (a JSON object of secret
 * variables). A new role assignment can take minutes to reach Key Vault, so a
 * 403 is retried too, for about four minutes, with a fresh token each time.
 * Messages name the secret's URL (no credential in it) and the failure, never
 * the token or the value: they reach the extension's status, which anyone with
 * Reader on the machine can read.
 */
function vaultFunction(identity: string | undefined): string {
  return `
# The node's larger secrets, from the Key Vault secret only this pool's identity may read.
function Get-VaultSecrets([string]$Url) {
    for ($attempt = 1; ; $attempt++) {
        try {
            $response = Invoke-RestMethod -UseBasicParsing -Uri $Url -Headers @{ Authorization = 'Bearer ' + (Get-ImdsToken ${q(imdsTokenUrl("https://vault.azure.net", identity))}) }
            break
        }
        catch {
            $reason = $_.Exception.Message
            if ($attempt -ge 10) { throw "reading the node's secrets from $Url failed $attempt times; the last: $reason" }
            $wait = [math]::Min(30, [math]::Pow(2, $attempt))
            Write-Warning "reading the node's secrets from $Url failed ($reason); trying again in $wait s"
            Start-Sleep -Seconds $wait
        }
    }
    # ConvertFrom-Json quotes what it cannot parse: its message must not reach the status.
    try { $values = $response.value | ConvertFrom-Json } catch { $values = $null }
    if ($values -isnot [System.Management.Automation.PSCustomObject]) { throw "the Key Vault secret $Url does not hold a JSON object of secret variables" }
    return $values
}
`;
}

/** The bootstrap script. */
export function renderBootstrap(args: BootstrapArgs): string {
  if (args.secretVariables.length === 0) throw new Error("a bootstrap needs at least the join token's secret variable");
  if (args.vaultSecret !== undefined && !VAULT_SECRET_URL.test(args.vaultSecret))
    throw new Error(
      `vaultSecret ${args.vaultSecret} is not a Key Vault secret URL without a version (https://<vault>.vault.azure.net/secrets/<name>)`,
    );
  const dir = args.installDir ?? DEFAULT_INSTALL_DIR;
  const config = canonicalJson(args.agentConfig);
  const contentDir = `"$root\\content\\${args.content.sha256.slice(0, 12)}"`;
  return `# winfleet bootstrap: idempotent, safe to re-run. Generated; do not edit.
param(
    [string]$Secrets,
    [switch]$SecretsFromStdin,
    [string]$ContentSas,
    [string]$SecretsVersion
)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Net.ServicePointManager]::SecurityProtocol = [Net.SecurityProtocolType]::Tls12
$root = ${q(dir)}
if ($SecretsFromStdin) { $Secrets = [Console]::In.ReadLine() }
if (-not $Secrets) { throw 'the secrets are missing: pass -Secrets or -SecretsFromStdin (a JSON object)' }

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

# A token from the VM's managed identity (IMDS), retried: IMDS answers 429 and 5xx while the
# identity is being attached. Messages name the endpoint and the failure, never a token.
function Get-ImdsToken([string]$Uri) {
    for ($attempt = 1; ; $attempt++) {
        try {
            return (Invoke-RestMethod -UseBasicParsing -Headers @{ Metadata = 'true' } -Uri $Uri).access_token
        }
        catch {
            $reason = $_.Exception.Message
            if ($attempt -ge 5) { throw "IMDS gave no managed-identity token after $attempt tries; the last: $reason" }
            # A warning, not output: the function's output is the token.
            Write-Warning "IMDS gave no managed-identity token ($reason); trying again in $([math]::Pow(2, $attempt)) s"
            Start-Sleep -Seconds ([math]::Pow(2, $attempt))
        }
    }
}

# A token for Azure Storage from the VM's managed identity.
function Get-StorageHeaders {
    $token = Get-ImdsToken ${q(imdsTokenUrl("https://storage.azure.com/", args.identity))}
    return @{ Authorization = "Bearer $token"; 'x-ms-version' = '2021-08-06' }
}
${args.vaultSecret === undefined ? "" : vaultFunction(args.identity)}
function Expand-Once([string]$Archive, [string]$Destination) {
    if (Test-Path -LiteralPath (Join-Path $Destination '.complete')) { return }
    if (Test-Path -LiteralPath $Destination) { Remove-Item -Recurse -Force -LiteralPath $Destination }
    New-Item -ItemType Directory -Force -Path $Destination | Out-Null
    & tar.exe -xzf $Archive -C $Destination
    if ($LASTEXITCODE -ne 0) { throw "tar could not extract $Archive ($LASTEXITCODE)" }
    New-Item -ItemType File -Path (Join-Path $Destination '.complete') | Out-Null
}

$secretValues = $Secrets | ConvertFrom-Json
${args.vaultSecret === undefined ? "" : vaultRead(args.vaultSecret)}foreach ($name in @(${[...args.secretVariables].sort().map(q).join(", ")})) {
    if (-not $secretValues.$name) { throw "the secret variable $name is missing from ${args.vaultSecret === undefined ? "-Secrets" : "-Secrets and the Key Vault secret"}" }
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
$agentMoved = $false
$target = "$root\\releases\\${args.agent.version}"
if (-not (Test-Path -LiteralPath $current) -or ((Get-Item -LiteralPath $current).Target -ne $target)) {
    if (Test-Path -LiteralPath $current) { (Get-Item -LiteralPath $current).Delete() }
    New-Item -ItemType Junction -Path $current -Target $target | Out-Null
    $agentMoved = $true
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

${agentNssmInstall(args.nssmUrl)}${agentServiceRegistration()}Write-Output "winfleet agent ${args.agent.version} bootstrapped"
`;
}

/** SHA-256 of the script: ties the extension's forceUpdateTag and re-runs to its content. */
export function bootstrapHash(script: string): string {
  return createHash("sha256").update(script).digest("hex");
}
