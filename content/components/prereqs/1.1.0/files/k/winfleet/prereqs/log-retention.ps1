# What the winfleet-log-retention task runs every day: deletes the node
# services' rotated logs under var\log (NSSM rotates each at 10 MB) older than
# the retention age, and all but the newest of each service's, so logs cannot
# fill the disk and trip the kubelet's nodefs eviction. The days and the count
# arrive as arguments (the install's variables). Runs outside the agent, so it
# finds the content root from its own location (root\k\winfleet\prereqs).
param(
    [Parameter(Mandatory = $true)][int]$Days,
    [Parameter(Mandatory = $true)][int]$Keep
)
$ErrorActionPreference = 'Stop'
$root = (Resolve-Path -LiteralPath (Join-Path $PSScriptRoot '..\..\..')).Path
$env:WINFLEET_ROOT = $root
Import-Module (Join-Path $root 'k\winfleet\common\WinfleetCommon.psm1') -Force
$deleted = Remove-WinfleetOldLogs -Directory (Join-Path $root 'var\log') -Days $Days -Keep $Keep
Write-WinfleetLog "log retention: deleted $deleted rotated logs (older than $Days days or past the newest $Keep)"
exit 0
