# prereqs uninstall: takes back the firewall rules, Defender exclusions and
# proxy variables the install set. The Containers feature stays unless
# PREREQS_DISABLE_CONTAINERS is true (disabling it needs a restart and breaks
# any other container workload); TLS hardening stays (loosening it is not an
# uninstall's call). The agent removes the log directories (this component's
# `files`).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot

$null = Remove-WinfleetScheduledTask -Name 'winfleet-log-retention'
$null = Remove-WinfleetFirewallRule -Name 'winfleet-kubelet'
$null = Remove-WinfleetFirewallRule -Name 'winfleet-cni-vxlan'

# Both runtimes' exclusions: removing one that is not there changes nothing.
$null = Remove-WinfleetDefenderExclusion -Path @(
    (Join-Path $root 'ProgramData\containerd'),
    (Join-Path $root 'Program Files\containerd'),
    (Join-Path $root 'var\lib\rancher\rke2'),
    (Join-Path $root 'var\lib\kubelet'),
    (Join-Path $root 'opt\cni'),
    (Join-Path $root 'etc\cni'),
    (Join-Path $root 'k')
) -Process @(
    (Join-Path $root 'Program Files\containerd\containerd.exe'),
    (Join-Path $root 'Program Files\containerd\containerd-shim-runhcs-v1.exe')
)

$stateFile = Join-Path $root 'k\winfleet\prereqs\proxy-state.json'
if (Test-Path -LiteralPath $stateFile) {
    $recorded = Get-Content -Raw -LiteralPath $stateFile | ConvertFrom-Json
    foreach ($property in $recorded.PSObject.Properties) {
        $null = Remove-WinfleetMachineEnvironment -Name $property.Name -Value ([string]$property.Value)
    }
    Remove-Item -LiteralPath $stateFile -Force
}

if ((Get-WinfleetVariable -Name 'PREREQS_DISABLE_CONTAINERS' -Default 'false') -eq 'true') {
    if ((Disable-WinfleetFeature -Name 'Containers').RestartNeeded) {
        exit 3010
    }
}
exit 0
