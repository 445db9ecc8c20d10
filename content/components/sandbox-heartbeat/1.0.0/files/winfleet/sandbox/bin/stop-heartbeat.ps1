# Stops the heartbeat recorded in the pid file, if it is still our PowerShell.
$ErrorActionPreference = 'Stop'
$pidFile = Join-Path $env:WINFLEET_ROOT 'winfleet/sandbox/run/heartbeat.pid'
if (Test-Path -LiteralPath $pidFile) {
    $p = Get-Process -Id ([int](Get-Content -LiteralPath $pidFile -Raw)) -ErrorAction SilentlyContinue
    if ($p -and $p.Path -eq (Get-Process -Id $PID).Path) { Stop-Process -Id $p.Id -Force }
    Remove-Item -LiteralPath $pidFile -Force
}
Write-Output 'heartbeat stopped'
