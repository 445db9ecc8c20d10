# join-rke2 uninstall: RKE2's own rke2-uninstall.ps1 (stops its processes,
# deletes the service, resets HNS, removes its data and containerd state;
# this component runs isolated because of the HNS reset), then whatever of
# the service and the PATH entries is left. The agent removes the binaries and
# the config (this component's files).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$prefix = Join-Path $root 'usr\local'

$uninstaller = Join-Path $prefix 'bin\rke2-uninstall.ps1'
if (Test-Path -LiteralPath $uninstaller) {
    $global:LASTEXITCODE = 0
    & $uninstaller -Confirm $false
    if ($LASTEXITCODE -ne 0) {
        throw "rke2-uninstall.ps1 exited with $LASTEXITCODE"
    }
}
$null = Remove-WinfleetService -Name 'rke2'
$null = Remove-WinfleetPathEntry -Path (Join-Path $prefix 'bin')
$null = Remove-WinfleetPathEntry -Path (Join-Path $root 'var\lib\rancher\rke2\bin')
exit 0
