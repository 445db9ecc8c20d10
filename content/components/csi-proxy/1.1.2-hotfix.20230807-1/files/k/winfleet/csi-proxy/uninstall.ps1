# csi-proxy uninstall: the service; the agent removes csi-proxy.exe.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

$null = Remove-WinfleetService -Name 'csi-proxy'
exit 0
