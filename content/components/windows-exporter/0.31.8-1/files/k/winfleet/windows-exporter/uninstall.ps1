# windows-exporter uninstall: the service; the agent removes the program.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

$null = Remove-WinfleetService -Name 'windows_exporter'
exit 0
