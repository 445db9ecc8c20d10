# containerd uninstall: the service, its PATH entry, its binaries and config.
# Image layers under ProgramData\containerd are removed too where Windows lets
# go of them; layers still held by the filter driver stay until a restart.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot

$null = Remove-WinfleetService -Name 'containerd'
$null = Remove-WinfleetPathEntry -Path (Join-Path $root 'Program Files\containerd')
$state = Join-Path $root 'ProgramData\containerd'
try {
    $null = Remove-WinfleetItem -Path $state
}
catch {
    Write-Warning "some container layers under $state are still in use and stay until the host restarts: $($_.Exception.Message)"
}
exit 0
