# node-reset uninstall: the startup task; the agent removes reset.ps1.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

$null = Remove-WinfleetScheduledTask -Name 'winfleet-node-reset'
exit 0
