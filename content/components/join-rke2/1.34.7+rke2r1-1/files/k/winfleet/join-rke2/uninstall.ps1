# join-rke2 uninstall: RKE2's own rke2-uninstall.ps1 (stops its processes,
# deletes the service, resets HNS, removes its data and containerd state;
# this component runs isolated because of the HNS reset), then whatever of
# the service and the PATH entries is left. The agent removes the binaries and
# the config (this component's files). RKE2's script deletes C:\etc, C:\var,
# C:\usr and C:\run whole (its Remove-Data), as RKE2 documents: a node leaving
# an RKE2 cluster loses anything else kept there. It runs as a child
# PowerShell through Invoke-WinfleetNative, so a native tool's stderr line
# inside it cannot stop it half-way (with ErrorActionPreference Stop, Windows
# PowerShell turns one into a terminating error in the calling PowerShell).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$prefix = Join-Path $root 'usr\local'

$uninstaller = Join-Path $prefix 'bin\rke2-uninstall.ps1'
if (Test-Path -LiteralPath $uninstaller) {
    $powershell = Join-Path $env:SystemRoot 'System32\WindowsPowerShell\v1.0\powershell.exe'
    # -Command, not -File: -File hands the script '$false' as text, which its [bool]$Confirm refuses.
    $command = "& '{0}' -Confirm `$false; exit `$LASTEXITCODE" -f $uninstaller.Replace("'", "''")
    $output = Invoke-WinfleetNative -FilePath $powershell -ArgumentList @('-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-Command', $command)
    Write-WinfleetLog "rke2-uninstall.ps1: $(($output | Select-Object -Last 5) -join ' / ')"
}
$null = Remove-WinfleetService -Name 'rke2'
$null = Remove-WinfleetPathEntry -Path (Join-Path $prefix 'bin')
$null = Remove-WinfleetPathEntry -Path (Join-Path $root 'var\lib\rancher\rke2\bin')
exit 0
