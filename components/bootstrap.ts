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
 *
 * The one gate: only the upgrader moves a node's agent and content versions. The
 * versions a new node installs first (agent bundle, content, template) are the
 * script's one target line; everything else is what the bootstrap does. A node
 * that already runs an agent and has an agent config keeps the agent and the
 * template and content its config names (the upgrader's), so running the script
 * again changes only what the bootstrap itself decides. The bootstrap's
 * epoch ({@link bootstrapEpoch}: its SHA-256 with the target line left neutral)
 * changes when, and only when, that does: it is the extension's forceUpdateTag,
 * the hash the extension checks, and what names a BYO host's bootstrap run.
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

/** Inputs of {@link renderBootstrap}: `agent`'s URL, digest and version, `content`'s, and `agentConfig`'s template
 * and templateVersion are the target a new node installs first (see the top of this file); the rest is the
 * bootstrap. */
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

// Fetches (or, copied over SSH, checks) the target's content archive into $contentArchive; the URL and digest are
// the target line's, how to read them (file, anonymous, identity, SAS) the bootstrap's.
function contentStep(c: ContentSource): string {
  const head = `$contentHash = $winfleetTarget.content.sha256.ToUpperInvariant()
$contentArchive = "$root\\downloads\\content-$($winfleetTarget.content.sha256.Substring(0, 12)).tgz"`;
  if (c.kind === "file") {
    return `${head}
Assert-Pinned -Path $winfleetTarget.content.path -ExpectedHash $contentHash
Copy-Item -Force -LiteralPath $winfleetTarget.content.path -Destination $contentArchive`;
  }
  if (c.auth === "sas") {
    return `${head}
if (-not $ContentSas) { throw 'this node reads its content with a SAS: pass -ContentSas' }
Get-Pinned -Url ($winfleetTarget.content.url + '?' + $ContentSas.TrimStart('?')) -ExpectedHash $contentHash -Path $contentArchive`;
  }
  const headers = c.auth === "managedIdentity" ? " -Headers (Get-StorageHeaders)" : "";
  return `${head}
Get-Pinned -Url $winfleetTarget.content.url -ExpectedHash $contentHash -Path $contentArchive${headers}`;
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
 * How long a refused read (401, 403) is retried: Azure documents that a role
 * assignment takes up to ten minutes to apply ("Troubleshoot Azure RBAC"), and
 * a CustomScriptExtension may run for 90 minutes.
 */
export const ACCESS_RETRY_MINUTES = 20;
/** How often any other failed read (a network error, a 404, a 5xx) is tried. */
const OTHER_ATTEMPTS = 5;

/**
 * PowerShell that reads the node's Key Vault secret (a JSON object of secret
 * variables). A new role assignment can take minutes to reach Key Vault, so a
 * refusal is retried (see {@link ACCESS_RETRY_MINUTES}), with a fresh token each time.
 * Messages name the secret's URL (no credential in it) and the failure, never
 * the token or the value: they reach the extension's status, which anyone with
 * Reader on the machine can read.
 */
function vaultFunction(identity: string | undefined): string {
  return `
# The node's larger secrets, from the Key Vault secret only this pool's identity may read.
function Get-VaultSecrets([string]$Url) {
    $deadline = (Get-Date).AddMinutes(${ACCESS_RETRY_MINUTES})
    for ($attempt = 1; ; $attempt++) {
        try {
            $response = Invoke-RestMethod -UseBasicParsing -Uri $Url -Headers @{ Authorization = 'Bearer ' + (Get-ImdsToken ${q(imdsTokenUrl("https://vault.azure.net", identity))}) }
            break
        }
        catch {
            $reason = $_.Exception.Message
            if (-not (Test-Retry $_ $attempt $deadline)) { throw "reading the node's secrets from $Url failed $attempt times; the last: $reason" }
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

/** What a new node installs first: the one line of the script the epoch leaves out. */
export interface BootstrapTarget {
  readonly agent: { readonly url: string; readonly sha256: string; readonly version: string };
  readonly content: { readonly sha256: string; readonly url?: string; readonly path?: string };
  readonly template?: string;
  readonly templateVersion?: string;
}

/** The target of `args`. */
export function bootstrapTarget(args: Pick<BootstrapArgs, "agent" | "content" | "agentConfig">): BootstrapTarget {
  const c = args.content;
  const { template, templateVersion } = args.agentConfig as { template?: string; templateVersion?: string };
  return {
    agent: { url: args.agent.url, sha256: args.agent.sha256, version: args.agent.version },
    content: c.kind === "file" ? { path: c.path, sha256: c.sha256 } : { url: c.url, sha256: c.sha256 },
    ...(template !== undefined ? { template } : {}),
    ...(templateVersion !== undefined ? { templateVersion } : {}),
  };
}

/**
 * The target line as the script carries it, and as a regular expression that finds it (multiline; the same one
 * the extension command applies on the node).
 */
export const TARGET_LINE = {
  render: (target: BootstrapTarget | undefined): string =>
    `$winfleetTarget = ${q(target === undefined ? "{}" : JSON.stringify(target))} | ConvertFrom-Json`,
  pattern: "^\\$winfleetTarget = '(?:[^']|'')*' \\| ConvertFrom-Json$",
} as const;

/**
 * The bootstrap's epoch: the SHA-256 of the script with its target line neutral. Unchanged by a new agent
 * version, template version, content or secret; changed by anything the bootstrap does.
 */
export function bootstrapEpoch(script: string): string {
  const neutral = script.replace(new RegExp(TARGET_LINE.pattern, "m"), TARGET_LINE.render(undefined));
  return createHash("sha256").update(neutral).digest("hex");
}

/** The bootstrap script. */
export function renderBootstrap(args: BootstrapArgs): string {
  if (args.secretVariables.length === 0) throw new Error("a bootstrap needs at least the join token's secret variable");
  if (args.vaultSecret !== undefined && !VAULT_SECRET_URL.test(args.vaultSecret))
    throw new Error(
      `vaultSecret ${args.vaultSecret} is not a Key Vault secret URL without a version (https://<vault>.vault.azure.net/secrets/<name>)`,
    );
  const dir = args.installDir ?? DEFAULT_INSTALL_DIR;
  // The template and its version are the target line's; the rest of the config is the bootstrap's.
  const config = canonicalJson(
    Object.fromEntries(Object.entries(args.agentConfig).filter(([k]) => k !== "template" && k !== "templateVersion")),
  );
  return `# winfleet bootstrap: idempotent, safe to re-run. Generated; do not edit.
param(
    [string]$Secrets,
    [switch]$SecretsFromStdin,
    [string]$ContentSas,
    [string]$SecretsVersion
)
# What a new node installs first; the upgrader moves the node's versions from then on.
${TARGET_LINE.render(bootstrapTarget(args))}
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

# The HTTP status of a failed request, 0 without a response (the network failed). Windows
# PowerShell's WebException and PowerShell 7's HttpResponseException both carry the response.
function Get-HttpStatus($Failure) {
    $response = $Failure.Exception.Response
    if ($null -eq $response) { return 0 }
    return [int]$response.StatusCode
}

# Whether a failed request is tried again. A new role assignment takes up to ten minutes to
# apply everywhere (and the extension may run for 90), so a refusal (401, 403) is retried until
# ${ACCESS_RETRY_MINUTES} minutes have passed; anything else ${OTHER_ATTEMPTS} times.
function Test-Retry($Failure, [int]$Attempt, [datetime]$Deadline) {
    $status = Get-HttpStatus $Failure
    if ($status -eq 401 -or $status -eq 403) { return (Get-Date) -lt $Deadline }
    return $Attempt -lt ${OTHER_ATTEMPTS}
}

function Get-Pinned([string]$Url, [string]$ExpectedHash, [string]$Path, [hashtable]$Headers = @{}) {
    if ((Test-Path -LiteralPath $Path) -and ((Get-FileHash -Algorithm SHA256 -LiteralPath $Path).Hash -eq $ExpectedHash)) { return }
    # Messages name the URL without its query: a SAS must not reach the extension's status.
    $shown = ($Url -split '\\?')[0]
    $partial = "$Path.partial"
    $deadline = (Get-Date).AddMinutes(${ACCESS_RETRY_MINUTES})
    for ($attempt = 1; ; $attempt++) {
        try {
            Invoke-WebRequest -UseBasicParsing -Uri $Url -Headers $Headers -OutFile $partial
            break
        }
        catch {
            $reason = $_.Exception.Message.Replace($Url, $shown)
            if (-not (Test-Retry $_ $attempt $deadline)) { throw "downloading $shown failed $attempt times; the last: $reason" }
            $wait = [math]::Min(30, [math]::Pow(2, $attempt))
            Write-Output "downloading $shown failed ($reason); trying again in $wait s"
            Start-Sleep -Seconds $wait
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

$current = "$root\\current"
$agentMoved = $false
# A node that runs an agent keeps it: the upgrader moves agent versions (up), never a re-run bootstrap.
if (-not (Test-Path -LiteralPath $current)) {
    $agentVersion = $winfleetTarget.agent.version
    $agentArchive = "$root\\downloads\\agent-$agentVersion.tgz"
    Get-Pinned -Url $winfleetTarget.agent.url -ExpectedHash $winfleetTarget.agent.sha256.ToUpperInvariant() -Path $agentArchive${args.agent.auth === "managedIdentity" ? " -Headers (Get-StorageHeaders)" : ""}
    Expand-Once -Archive $agentArchive -Destination "$root\\releases\\$agentVersion"
    New-Item -ItemType Junction -Path $current -Target "$root\\releases\\$agentVersion" | Out-Null
    $agentMoved = $true
}

$configPath = "$root\\agent.json"
$kept = $null
if (Test-Path -LiteralPath $configPath) {
    try { $kept = [IO.File]::ReadAllText($configPath) | ConvertFrom-Json } catch { $kept = $null }
}
# A node with an agent config keeps the template and content in it (where the upgrader took it);
# a new node takes the target's.
if ($kept -and $kept.content -and $kept.templateVersion -and (Test-Path -LiteralPath $kept.content)) {
    $template = $kept.template
    $templateVersion = $kept.templateVersion
    $contentDir = $kept.content
}
else {
${contentStep(args.content)
  .split("\n")
  .map((l) => `    ${l}`)
  .join("\n")}
    $contentDir = "$root\\content\\$($winfleetTarget.content.sha256.Substring(0, 12))"
    Expand-Once -Archive $contentArchive -Destination $contentDir
    $template = $winfleetTarget.template
    $templateVersion = $winfleetTarget.templateVersion
}

$config = ${q(config)} | ConvertFrom-Json
if ($template) { $config | Add-Member -NotePropertyName template -NotePropertyValue $template -Force }
if ($templateVersion) { $config | Add-Member -NotePropertyName templateVersion -NotePropertyValue $templateVersion -Force }
$config | Add-Member -NotePropertyName content -NotePropertyValue $contentDir -Force
$config | Add-Member -NotePropertyName secrets -NotePropertyValue $secretValues -Force
$json = $config | ConvertTo-Json -Depth 20
$changed = $false
# Written and compared byte for byte (UTF-8, no BOM, no added newline): a re-run with the same
# config leaves the running agent alone.
if (-not (Test-Path -LiteralPath $configPath) -or -not ([IO.File]::ReadAllText($configPath) -ceq $json)) {
    [IO.File]::WriteAllText("$configPath.partial", $json, (New-Object System.Text.UTF8Encoding -ArgumentList $false))
    Move-Item -Force -LiteralPath "$configPath.partial" -Destination $configPath
    $changed = $true
}

${agentNssmInstall(args.nssmUrl)}${agentServiceRegistration()}Write-Output "winfleet agent bootstrapped: $((Get-Item -LiteralPath $current).Target)"
`;
}

/** SHA-256 of the script, target line included: what differs from one deployment's userData to the next. */
export function bootstrapHash(script: string): string {
  return createHash("sha256").update(script).digest("hex");
}
