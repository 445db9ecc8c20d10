# node-reset install (and post_upgrade): registers the startup task
# \winfleet\winfleet-node-reset (SYSTEM) that resets HNS and starts the node
# services after every reboot (reset.ps1); a run that fails (a service that
# would not start) runs again, three times, a minute apart.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot

# The services wait for the reset of the boot they run in. On the first
# registration this boot's HNS state is the one the install made, with nothing
# stale to reset: record this boot as reset, or the services would wait for a
# run that comes only with the next boot.
$first = $null -eq (Get-ScheduledTask -TaskName 'winfleet-node-reset' -TaskPath '\winfleet\' -ErrorAction SilentlyContinue)
$null = Set-WinfleetScheduledTask -Name 'winfleet-node-reset' -ScriptPath (Join-Path $root 'k\winfleet\node-reset\reset.ps1') -Description 'winfleet: reset HNS and restart the node services after a reboot' -RestartCount 3 -RestartMinutes 1
if ($first) {
    Set-WinfleetHnsResetDone
}
exit 0
