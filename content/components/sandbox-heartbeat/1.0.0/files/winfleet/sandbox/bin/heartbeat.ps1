# The long-running host process: a heartbeat timestamp every second until stopped.
param([Parameter(Mandatory)][string]$StateDir)
$ErrorActionPreference = 'Stop'
$beat = Join-Path $StateDir 'heartbeat.txt'
while ($true) {
    Set-Content -LiteralPath $beat -Value ([DateTime]::UtcNow.ToString('o')) -Encoding utf8NoBOM
    Start-Sleep -Seconds 1
}
