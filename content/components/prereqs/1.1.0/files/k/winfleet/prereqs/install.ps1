# prereqs install (and post_upgrade): what every Windows node needs before a
# container runtime: the Containers feature (a restart when it was just
# enabled), Microsoft Defender exclusions for container paths, firewall rules
# for the kubelet and the CNI's VXLAN traffic, TLS and proxy settings from
# variables, and the log directories the node services write to.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$restart = $false

# The oldest build of each Windows Server release the node's CNI supports
# (Calico's Windows requirements): below it, pods would start without what
# Calico needs (DSR, the HNS fixes), so the node is refused here, first.
$floor = Test-WinfleetOsBuildFloor
if ($floor -ne '') {
    throw $floor
}

if ((Enable-WinfleetFeature -Name 'Containers').RestartNeeded) {
    $restart = $true
}

# Scanning image layers and container scratch space on every access slows
# containers down and can break layer extraction (AKS and WMCO exclude these).
# Where the runtime keeps them depends on the template: containerd's own
# install, or RKE2's agent (its containerd state under var\lib\rancher\rke2).
if ((Get-WinfleetVariable -Name 'PREREQS_RUNTIME' -Default 'containerd') -eq 'rke2') {
    # RKE2's containerd binary sits under a data directory named by its hash: the directory is excluded whole.
    $null = Add-WinfleetDefenderExclusion -Path @(
        (Join-Path $root 'var\lib\rancher\rke2'),
        (Join-Path $root 'var\lib\kubelet'),
        (Join-Path $root 'opt\cni'),
        (Join-Path $root 'etc\cni'),
        (Join-Path $root 'k')
    )
}
else {
    $null = Add-WinfleetDefenderExclusion -Path @(
        (Join-Path $root 'ProgramData\containerd'),
        (Join-Path $root 'Program Files\containerd'),
        (Join-Path $root 'var\lib\kubelet'),
        (Join-Path $root 'opt\cni'),
        (Join-Path $root 'etc\cni'),
        (Join-Path $root 'k')
    ) -Process @(
        (Join-Path $root 'Program Files\containerd\containerd.exe'),
        (Join-Path $root 'Program Files\containerd\containerd-shim-runhcs-v1.exe')
    )
}

# The API server reaches the kubelet on 10250 (logs, exec, metrics); Calico's
# VXLAN overlay carries pod traffic between nodes on UDP 4789.
$null = Set-WinfleetFirewallRule -Name 'winfleet-kubelet' -DisplayName 'winfleet: kubelet API (TCP 10250)' -Protocol 'TCP' -LocalPort @(10250)
$null = Set-WinfleetFirewallRule -Name 'winfleet-cni-vxlan' -DisplayName 'winfleet: CNI VXLAN overlay (UDP 4789)' -Protocol 'UDP' -LocalPort @(4789)

# .NET programs (and Windows PowerShell's downloads) negotiate the system's
# TLS versions, 1.2 and newer, instead of .NET 4's SSL3/TLS 1.0 default.
foreach ($framework in @('HKLM:\SOFTWARE\Microsoft\.NETFramework\v4.0.30319', 'HKLM:\SOFTWARE\Wow6432Node\Microsoft\.NETFramework\v4.0.30319')) {
    $null = Set-WinfleetRegistryValue -Path $framework -Name 'SchUseStrongCrypto' -Value 1 -Type 'DWord'
    $null = Set-WinfleetRegistryValue -Path $framework -Name 'SystemDefaultTlsVersions' -Value 1 -Type 'DWord'
}
if ((Get-WinfleetVariable -Name 'WINFLEET_DISABLE_LEGACY_TLS' -Default 'false') -eq 'true') {
    # SCHANNEL reads these at boot: a change needs a restart.
    foreach ($protocol in @('TLS 1.0', 'TLS 1.1')) {
        foreach ($side in @('Client', 'Server')) {
            $key = "HKLM:\SYSTEM\CurrentControlSet\Control\SecurityProviders\SCHANNEL\Protocols\$protocol\$side"
            if ((Set-WinfleetRegistryValue -Path $key -Name 'Enabled' -Value 0 -Type 'DWord').Changed) {
                $restart = $true
            }
            if ((Set-WinfleetRegistryValue -Path $key -Name 'DisabledByDefault' -Value 1 -Type 'DWord').Changed) {
                $restart = $true
            }
        }
    }
}

# Proxy settings for the node services (containerd pulls images, the kubelet
# and RKE2 reach the API server): machine environment variables, recorded so
# that uninstall removes only what this component set.
$stateFile = Join-Path $root 'k\winfleet\prereqs\proxy-state.json'
$previous = @{}
if (Test-Path -LiteralPath $stateFile) {
    $recorded = Get-Content -Raw -LiteralPath $stateFile | ConvertFrom-Json
    foreach ($property in $recorded.PSObject.Properties) {
        $previous[$property.Name] = [string]$property.Value
    }
}
$applied = [ordered]@{}
foreach ($name in @('HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY')) {
    $value = Get-WinfleetVariable -Name $name
    if ($value -ne '') {
        $null = Set-WinfleetMachineEnvironment -Name $name -Value $value
        $applied[$name] = $value
    }
    elseif ($previous.ContainsKey($name)) {
        $null = Remove-WinfleetMachineEnvironment -Name $name -Value $previous[$name]
    }
}
$null = Set-WinfleetFileContent -Path $stateFile -Content (ConvertTo-Json -InputObject $applied)
# Services started in this boot do not see a new machine environment: put the
# proxy into the environment of those that exist, and restart the running ones.
foreach ($service in @(@('containerd', $true), @('rke2', $false), @('kubelet', $true))) {
    $changed = Set-WinfleetServiceProxyEnvironment -Name $service[0] -Hosted:$service[1]
    if ($changed -and (Get-Service -Name $service[0] -ErrorAction SilentlyContinue).Status -eq 'Running') {
        Restart-WinfleetService -Name $service[0]
    }
}

foreach ($directory in @('containerd', 'kubelet', 'kube-proxy', 'calico', 'csi-proxy', 'windows-exporter', 'node-reset', 'rke2')) {
    New-Item -ItemType Directory -Force -Path (Join-Path $root "var\log\$directory") | Out-Null
}

# The node services' logs rotate by size (NSSM); this daily task bounds how
# many rotated logs stay, and for how long.
$days = Assert-WinfleetVariable -Name 'LOG_RETENTION_DAYS' -Pattern '^[1-9][0-9]{0,2}$' -Expected 'a number of days from 1 to 999'
$keep = Assert-WinfleetVariable -Name 'LOG_RETENTION_FILES' -Pattern '^[1-9][0-9]{0,2}$' -Expected 'a number of files from 1 to 999'
$null = Set-WinfleetScheduledTask -Name 'winfleet-log-retention' -ScriptPath (Join-Path $root 'k\winfleet\prereqs\log-retention.ps1') -Arguments "-Days $days -Keep $keep" -DailyAt '03:00' -Description 'winfleet: delete rotated node service logs past their retention'

if ($restart) {
    Write-WinfleetLog 'Windows needs a restart to finish; the agent restarts the host and continues'
    exit 3010
}
exit 0
