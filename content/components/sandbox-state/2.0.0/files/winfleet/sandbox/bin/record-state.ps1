# Records a lifecycle event: state.json holds the latest (schema 2), and
# history.log gets one line per run, so a test can count how often each step ran.
param([Parameter(Mandatory)][string]$Event)
$ErrorActionPreference = 'Stop'
$dir = Join-Path $env:WINFLEET_ROOT 'winfleet/sandbox/var'
New-Item -ItemType Directory -Force -Path $dir | Out-Null
$state = [ordered]@{
    component = $env:WINFLEET_COMPONENT
    version   = $env:WINFLEET_COMPONENT_VERSION
    event     = $Event
    schema    = 2
}
$state | ConvertTo-Json -Compress | Set-Content -LiteralPath (Join-Path $dir 'state.json') -Encoding utf8NoBOM
Add-Content -LiteralPath (Join-Path $dir 'history.log') -Value "$Event $($env:WINFLEET_COMPONENT_VERSION)" -Encoding utf8NoBOM
Write-Output "recorded $Event for sandbox-state $($env:WINFLEET_COMPONENT_VERSION)"
