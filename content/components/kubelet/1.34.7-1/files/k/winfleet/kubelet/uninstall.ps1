# kubelet uninstall: the service and the PATH entry; the agent removes
# kubelet.exe, its configuration and its state (this component's files).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot

$null = Remove-WinfleetService -Name 'kubelet'
$null = Remove-WinfleetPathEntry -Path (Join-Path $root 'k')
exit 0
