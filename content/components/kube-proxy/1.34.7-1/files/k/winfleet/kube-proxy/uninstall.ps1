# kube-proxy uninstall: the service, then the HNS load balancers (policy
# lists) it programmed, which would otherwise outlive it until HNS is reset.
# The agent removes kube-proxy.exe and its kubeconfig (this component's files).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

$null = Remove-WinfleetService -Name 'winfleet-kube-proxy'
# An earlier content version's name for it.
$null = Remove-WinfleetService -Name 'kube-proxy'
Import-WinfleetHns
Get-HnsPolicyList | Remove-HnsPolicyList
exit 0
