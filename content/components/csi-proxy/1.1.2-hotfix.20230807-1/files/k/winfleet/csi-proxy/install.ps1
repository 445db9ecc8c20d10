# csi-proxy install (and post_upgrade): csi-proxy.exe, which lets CSI node
# plugins in containers manage the host's disks, volumes and SMB shares over
# named pipes, as the csi-proxy service (restarted on failure). It runs under
# NSSM, logging to stderr, so its log rotates at 10 MB and the log retention
# task deletes the old ones: klog's own -log_file never rotates (past its size
# cap klog starts the same file over).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$csiProxy = Join-Path $root 'k\csi-proxy.exe'

$artifact = Get-WinfleetArtifact -Manifest (Join-Path $root 'k\winfleet\csi-proxy\artifacts.json') -Name 'csi-proxy'
$staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $root 'k\winfleet\staging\csi-proxy')
$source = Join-Path $staging 'bin\csi-proxy.exe'
$binaryChanged = $false
if (-not (Test-WinfleetFileCurrent -Source $source -Destination $csiProxy)) {
    Suspend-WinfleetService -Name 'csi-proxy'
    $binaryChanged = Install-WinfleetFile -Source $source -Destination $csiProxy
    Write-WinfleetLog "installed csi-proxy $($artifact.Version)"
}
$null = Remove-WinfleetItem -Path $staging

# Not -windows-service: NSSM is the service, csi-proxy a console program under it.
$service = Set-WinfleetHostedService -Name 'csi-proxy' -Program $csiProxy -Arguments '-logtostderr=true' -LogFile (Join-Path $root 'var\log\csi-proxy\csi-proxy.log') -DisplayName 'csi-proxy' -Description 'winfleet: CSI proxy for CSI node plugins' -StartupType 'Automatic'
if (($binaryChanged -or $service.Changed) -and (Get-Service -Name 'csi-proxy').Status -eq 'Running') {
    Restart-WinfleetService -Name 'csi-proxy'
}
Resume-WinfleetService -Name 'csi-proxy'
exit 0
