# calico uninstall: the Felix and node services, then the HNS networks Calico
# made (which drops the host's connectivity for a moment: this component runs
# isolated), the firewall rule Calico opened and Calico's registry state. The agent removes CalicoWindows and
# the CNI plugin and config (this component's files).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

$null = Remove-WinfleetService -Name 'CalicoFelix'
$null = Remove-WinfleetService -Name 'CalicoNode'
Import-WinfleetHns
$networks = @(Get-HnsNetwork | Where-Object { $_.Name -eq 'Calico' -or $_.Name -eq 'External' })
if ($networks.Count -gt 0) {
    Write-WinfleetLog "removing the HNS networks $(($networks | ForEach-Object { $_.Name }) -join ', ')"
    $networks | Remove-HnsNetwork
}
# The VXLAN rule Calico's node service opens for itself.
$null = Remove-WinfleetFirewallRule -Name 'OverlayTraffic4789UDP'
$null = Remove-WinfleetItem -Path 'HKLM:\SOFTWARE\Tigera\Calico'
exit 0
