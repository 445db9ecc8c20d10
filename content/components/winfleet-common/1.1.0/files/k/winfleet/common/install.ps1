# winfleet-common install (and post_upgrade): lays down NSSM, the service host
# that runs the programs which are not Windows services by themselves
# (kubelet, the kube-proxy and Calico wrappers). The module itself arrives as
# this component's files.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

# C:\k holds what SYSTEM runs (NSSM, the component scripts, the node binaries) and
# goes on the machine PATH: only SYSTEM and Administrators may write there.
$null = Set-WinfleetDirectoryAcl -Path (Get-WinfleetPath -Relative 'k')

$manifest = Get-WinfleetPath -Relative 'k\winfleet\common\artifacts.json'
$nssm = Get-WinfleetArtifact -Manifest $manifest -Name 'nssm'
$staging = Expand-WinfleetArtifact -Artifact $nssm -Destination (Get-WinfleetPath -Relative 'k\winfleet\staging\nssm')
$source = Join-Path $staging 'nssm-2.24\win64\nssm.exe'
if (Install-WinfleetFile -Source $source -Destination (Get-WinfleetPath -Relative 'k\winfleet\bin\nssm.exe')) {
    Write-WinfleetLog 'installed NSSM 2.24'
}
$null = Remove-WinfleetItem -Path $staging
exit 0
