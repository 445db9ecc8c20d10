# Starts heartbeat.ps1 detached and records its pid. Idempotent: a heartbeat
# that is already running (same pid, same PowerShell) is left alone.
$ErrorActionPreference = 'Stop'
$run = Join-Path $env:WINFLEET_ROOT 'winfleet/sandbox/run'
New-Item -ItemType Directory -Force -Path $run | Out-Null
$pidFile = Join-Path $run 'heartbeat.pid'
$pwsh = (Get-Process -Id $PID).Path
if (Test-Path -LiteralPath $pidFile) {
    $old = Get-Process -Id ([int](Get-Content -LiteralPath $pidFile -Raw)) -ErrorAction SilentlyContinue
    if ($old -and $old.Path -eq $pwsh) { Write-Output "heartbeat already running as $($old.Id)"; return }
}
$script = Join-Path $env:WINFLEET_ROOT 'winfleet/sandbox/bin/heartbeat.ps1'
$p = Start-Process -FilePath $pwsh -PassThru `
    -ArgumentList @('-NoLogo', '-NoProfile', '-NonInteractive', '-File', $script, '-StateDir', $run) `
    -RedirectStandardOutput (Join-Path $run 'heartbeat.out') -RedirectStandardError (Join-Path $run 'heartbeat.err')
Set-Content -LiteralPath $pidFile -Value $p.Id -Encoding ascii
Write-Output "heartbeat started as $($p.Id)"
