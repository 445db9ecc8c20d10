# csi-proxy install (and post_upgrade): csi-proxy.exe, which lets CSI node
# plugins in containers manage the host's disks, volumes and SMB shares over
# named pipes, as the csi-proxy service (restarted on failure).
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

$binaryPath = '"{0}" -windows-service -log_file="{1}" -logtostderr=false' -f $csiProxy, (Join-Path $root 'var\log\csi-proxy\csi-proxy.log')
$service = Set-WinfleetService -Name 'csi-proxy' -BinaryPath $binaryPath -DisplayName 'csi-proxy' -Description 'winfleet: CSI proxy for CSI node plugins' -StartupType 'Automatic'
if (($binaryChanged -or $service.Changed) -and (Get-Service -Name 'csi-proxy').Status -eq 'Running') {
    Restart-WinfleetService -Name 'csi-proxy'
}
Resume-WinfleetService -Name 'csi-proxy'
exit 0
