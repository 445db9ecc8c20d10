/**
 * The node agent as a Windows service, rendered as PowerShell by pure functions.
 * Node.js cannot answer the Service Control Manager, so NSSM (pinned, the
 * release the content also pins) hosts `node.exe … serve`. The SCM is the one
 * supervisor: NSSM stops the service when the agent exits (AppExit Exit), and
 * the service's failure actions restart it after 5, 10 and 30 s (the last
 * repeated for every later failure), with `failureflag 1` so an exit with an
 * error code counts as a failure, not only a crash of the host process. Every
 * value converges in place, so registering twice changes nothing, and an
 * upgrade (which moves the `current` junction) keeps the service as it is.
 */
import { AGENT_NODE_FLAGS } from "../agent/common";

/** The agent's Windows service, also the name of the scheduled task earlier bootstraps registered. */
export const AGENT_SERVICE = "winfleet-agent";

/**
 * NSSM 2.24, pinned: the hash the content's winfleet-common pins (Calico's packaging and Chocolatey publish the same),
 * fetched from the Kubernetes project's mirror sig-windows-tools installs it from (nssm.cc itself is often down).
 */
export const AGENT_NSSM = {
  url: "https://k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip",
  sha256: "727d1e42275c605e0f04aba98095c38a8e1e46def453cdffce42869428aa6743",
  /** nssm.exe inside the archive. */
  exe: "nssm-2.24\\win64\\nssm.exe",
} as const;

/** The failure actions, in sc.exe's syntax: restart after 5, 10 and 30 s. */
export const AGENT_FAILURE_ACTIONS = "restart/5000/restart/10000/restart/30000";
/** Seconds without a failure after which the SCM counts failures from the first action again. */
export const AGENT_FAILURE_RESET_SECONDS = 86400;

const q = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** Where the bootstrap unpacks NSSM under its install directory (`$root`), by the archive's hash. */
export function agentNssmPath(root: string): string {
  return `${root}\\nssm\\${AGENT_NSSM.sha256.slice(0, 12)}\\${AGENT_NSSM.exe}`;
}

/**
 * `Register-WinfleetAgentService`: creates or converges the service and returns
 * whether anything changed. Self-contained (the bootstrap runs before any content
 * module is on the host); the Windows workflow's Pester tests run this very text.
 */
export function agentServiceFunction(): string {
  return `function Register-WinfleetAgentService {
    # Creates service Name (NSSM hosting Node with Arguments), or converges it in
    # place: binary path, delayed automatic start, NSSM's settings, the failure
    # actions. Returns whether the service or its settings changed.
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$Nssm,
        [Parameter(Mandatory = $true)][string]$Node,
        [Parameter(Mandatory = $true)][string]$Arguments,
        [Parameter(Mandatory = $true)][string]$Directory,
        [Parameter(Mandatory = $true)][string]$LogFile
    )
    if ($Name -notmatch '^[A-Za-z0-9_.-]+$') {
        throw "service name '$Name' may hold letters, digits, '-', '_' and '.' only"
    }
    $changed = $false
    $binary = '"' + $Nssm + '"'
    $displayName = 'winfleet agent'
    $service = Get-CimInstance -ClassName Win32_Service -Filter "Name='$Name'"
    if ($null -eq $service) {
        New-Service -Name $Name -BinaryPathName $binary -DisplayName $displayName -StartupType Automatic | Out-Null
        $changed = $true
    }
    elseif ($service.PathName -ne $binary -or $service.StartMode -ne 'Auto' -or $service.DisplayName -ne $displayName) {
        # Win32_Service reads 'Auto' but Change() takes 'Automatic'.
        $result = Invoke-CimMethod -InputObject $service -MethodName Change -Arguments @{ PathName = $binary; StartMode = 'Automatic'; DisplayName = $displayName }
        if ($result.ReturnValue -ne 0) {
            throw "changing service $Name failed: Win32_Service.Change returned $($result.ReturnValue)"
        }
        $changed = $true
    }
    $sc = Join-Path $env:SystemRoot 'System32\\sc.exe'
    $key = "HKLM:\\SYSTEM\\CurrentControlSet\\Services\\$Name"
    # Delayed: the agent starts once the network and the boot-time services have, through
    # the SCM (which keeps its own copy of a service's start settings, so not by registry).
    if ((Get-Item -LiteralPath $key).GetValue('DelayedAutostart', 0) -ne 1) {
        $null = & $sc 'config' $Name 'start=' 'delayed-auto'
        if ($LASTEXITCODE -ne 0) {
            throw "sc.exe could not make $Name start delayed ($LASTEXITCODE)"
        }
        $changed = $true
    }
    Set-Service -Name $Name -Description 'winfleet: the node agent (lifecycle engine, broker, reporter), Node.js under NSSM'
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $LogFile) | Out-Null
    # AppExit Exit: NSSM does not restart the agent itself but stops the service, with the
    # agent's exit code, so the SCM's failure actions are the one supervisor.
    # AppKillProcessTree 0: a stop ends the agent only; a detached self-upgrade it started
    # must outlive the stop it asked for. Ctrl+C first, 15 s to shut down cleanly.
    $settings = @(
        @{ Path = "$key\\Parameters"; Name = 'Application'; Value = $Node; Type = 'ExpandString' },
        @{ Path = "$key\\Parameters"; Name = 'AppParameters'; Value = $Arguments; Type = 'ExpandString' },
        @{ Path = "$key\\Parameters"; Name = 'AppDirectory'; Value = $Directory; Type = 'ExpandString' },
        @{ Path = "$key\\Parameters"; Name = 'AppStdout'; Value = $LogFile; Type = 'ExpandString' },
        @{ Path = "$key\\Parameters"; Name = 'AppStderr'; Value = $LogFile; Type = 'ExpandString' },
        @{ Path = "$key\\Parameters"; Name = 'AppRotateFiles'; Value = 1; Type = 'DWord' },
        @{ Path = "$key\\Parameters"; Name = 'AppRotateOnline'; Value = 1; Type = 'DWord' },
        @{ Path = "$key\\Parameters"; Name = 'AppRotateBytes'; Value = 10485760; Type = 'DWord' },
        @{ Path = "$key\\Parameters"; Name = 'AppStopMethodConsole'; Value = 15000; Type = 'DWord' },
        @{ Path = "$key\\Parameters"; Name = 'AppKillProcessTree'; Value = 0; Type = 'DWord' },
        @{ Path = "$key\\Parameters\\AppExit"; Name = '(default)'; Value = 'Exit'; Type = 'String' }
    )
    foreach ($setting in $settings) {
        if (-not (Test-Path -LiteralPath $setting.Path)) {
            New-Item -Path $setting.Path -Force | Out-Null
        }
        $valueName = $setting.Name
        if ($valueName -eq '(default)') {
            $valueName = ''
        }
        $item = Get-Item -LiteralPath $setting.Path
        $have = $item.GetValue($valueName, $null, 'DoNotExpandEnvironmentNames')
        if ($null -eq $have -or [string]$item.GetValueKind($valueName) -ne $setting.Type -or [string]$have -cne [string]$setting.Value) {
            New-ItemProperty -LiteralPath $setting.Path -Name $setting.Name -Value $setting.Value -PropertyType $setting.Type -Force | Out-Null
            $changed = $true
        }
    }
    # Setting them again is harmless: sc.exe writes the same values.
    $null = & $sc 'failure' $Name 'reset=' '${AGENT_FAILURE_RESET_SECONDS}' 'actions=' '${AGENT_FAILURE_ACTIONS}'
    if ($LASTEXITCODE -ne 0) {
        throw "sc.exe could not set the failure actions of $Name ($LASTEXITCODE)"
    }
    # Failure actions also for a stop with an error code (the agent exited), not only a crash.
    $null = & $sc 'failureflag' $Name '1'
    if ($LASTEXITCODE -ne 0) {
        throw "sc.exe could not set the failure flag of $Name ($LASTEXITCODE)"
    }
    return $changed
}
`;
}

/**
 * PowerShell that registers the agent's service and (re)starts it: it expects
 * `$root`, `$node`, `$current`, `$configPath` and `$nssm` set, and `$changed`
 * (the agent config changed) and `$agentMoved` (`current` now points at another
 * version): either restarts a running agent. An agent
 * an earlier bootstrap ran as a scheduled task is taken off it first, so nothing
 * supervises the agent twice. One text for the bootstrap and a release's
 * `service/register-winfleet-agent.ps1`.
 */
export function agentServiceRegistration(): string {
  return `${agentServiceFunction()}
# Earlier bootstraps ran the agent as a scheduled task with a watchdog trigger: the service
# replaces it, once the agent the task ran has stopped (two agents would contend for the broker's pipe).
if ($null -ne (Get-ScheduledTask -TaskName ${q(AGENT_SERVICE)} -ErrorAction SilentlyContinue)) {
    Stop-ScheduledTask -TaskName ${q(AGENT_SERVICE)}
    $deadline = (Get-Date).AddSeconds(60)
    while ((Get-ScheduledTask -TaskName ${q(AGENT_SERVICE)}).State -eq 'Running') {
        if ((Get-Date) -gt $deadline) { throw 'the winfleet-agent scheduled task did not stop within 60 s' }
        Start-Sleep -Milliseconds 500
    }
    Unregister-ScheduledTask -TaskName ${q(AGENT_SERVICE)} -Confirm:$false
}
$agentArguments = '${AGENT_NODE_FLAGS.join(" ")} "' + "$current\\bin\\winfleet-agent.js" + '" serve --config "' + $configPath + '"'
# Its output beside the config, where winfleet-agent diagnose looks for the agent's log.
$registered = Register-WinfleetAgentService -Name ${q(AGENT_SERVICE)} -Nssm $nssm -Node $node -Arguments $agentArguments -Directory $root -LogFile "$root\\agent.log"
if (($changed -or $agentMoved -or $registered) -and (Get-Service -Name ${q(AGENT_SERVICE)}).Status -ne 'Stopped') {
    Restart-Service -Name ${q(AGENT_SERVICE)} -Force
}
if ((Get-Service -Name ${q(AGENT_SERVICE)}).Status -ne 'Running') {
    Start-Service -Name ${q(AGENT_SERVICE)}
}
`;
}

/**
 * A release's Windows service file: registers the agent unpacked under
 * `<InstallDir>\\releases\\<version>` (with `current` pointing at it, and NSSM
 * where the bootstrap unpacks it) as the service the bootstrap registers.
 */
export function renderServiceRegistrationScript(nodeExe: string, installDir: string): string {
  return `# Registers the winfleet agent as the Windows service the node bootstrap registers (NSSM
# hosting Node.js, restarted by the SCM's failure actions) and starts it. Expects the layout the
# bootstrap makes: the agent bundle unpacked under <InstallDir>\\releases\\<version>,
# <InstallDir>\\current pointing at it, the Node runtime of node-runtime.json under
# <InstallDir>\\node, NSSM under <InstallDir>\\nssm, and the agent config.
param(
    [string]$InstallDir = ${q(installDir)},
    [string]$NodePath = '',
    [string]$NssmPath = '',
    [string]$Config = ''
)
$ErrorActionPreference = 'Stop'
$root = $InstallDir
$node = if ($NodePath) { $NodePath } else { Join-Path "$InstallDir\\node" ${q(nodeExe)} }
$nssm = if ($NssmPath) { $NssmPath } else { ${agentNssmPathExpression("$InstallDir")} }
$current = "$InstallDir\\current"
$configPath = if ($Config) { $Config } else { "$InstallDir\\agent.json" }
$changed = $true
$agentMoved = $false
foreach ($path in @($node, $nssm, "$current\\bin\\winfleet-agent.js", $configPath)) {
    if (-not (Test-Path -LiteralPath $path)) { throw "$path does not exist: see the comment at the top of this script" }
}
${agentServiceRegistration()}Write-Output "winfleet agent registered as the service ${AGENT_SERVICE}"
`;
}

/** The PowerShell expression of NSSM's path under the install directory held by `rootVariable`. */
export function agentNssmPathExpression(rootVariable: string): string {
  return `"${agentNssmPath(rootVariable)}"`;
}

/**
 * PowerShell that downloads (pinned) and unpacks NSSM for the bootstrap, setting `$nssm`; uses the bootstrap's
 * Get-Pinned and Expand-Once. `url` is where NSSM is fetched (a stack's mirror); the digest stays pinned.
 */
export function agentNssmInstall(url: string = AGENT_NSSM.url): string {
  const archive = `"$root\\downloads\\nssm-${AGENT_NSSM.sha256.slice(0, 12)}.zip"`;
  // Windows' tar.exe is bsdtar, which reads zip archives (and ignores -z when extracting).
  return `Get-Pinned -Url ${q(url)} -ExpectedHash ${q(AGENT_NSSM.sha256.toUpperCase())} -Path ${archive}
Expand-Once -Archive ${archive} -Destination "$root\\nssm\\${AGENT_NSSM.sha256.slice(0, 12)}"
$nssm = ${agentNssmPathExpression("$root")}
`;
}
