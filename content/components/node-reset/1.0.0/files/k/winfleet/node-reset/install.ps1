# node-reset install (and post_upgrade): registers the startup task
# \winfleet\winfleet-node-reset (SYSTEM) that resets HNS and restarts the node
# services after every reboot (reset.ps1).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot

$null = Set-WinfleetScheduledTask -Name 'winfleet-node-reset' -ScriptPath (Join-Path $root 'k\winfleet\node-reset\reset.ps1') -Description 'winfleet: reset HNS and restart the node services after a reboot'
exit 0
