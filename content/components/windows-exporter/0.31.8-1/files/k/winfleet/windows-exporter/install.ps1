# windows-exporter install (and post_upgrade): windows_exporter as the
# windows_exporter service, listening on port 9796 on the loopback address:
# containers reach it through the broker's port proxy (winfleet-broker allows
# 9796), so no firewall rule opens it to the network.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$exporter = Join-Path $root 'Program Files\windows_exporter\windows_exporter.exe'
$listen = Assert-WinfleetVariable -Name 'WINDOWS_EXPORTER_LISTEN_ADDRESS' -Pattern '^[0-9a-fA-F.:\[\]]*:[0-9]+$' -Expected 'address:port'
$collectors = Assert-WinfleetVariable -Name 'WINDOWS_EXPORTER_COLLECTORS' -Pattern '^[A-Za-z0-9_.\[\],]+$' -Expected 'a comma-separated list of collectors'

$artifact = Get-WinfleetArtifact -Manifest (Join-Path $root 'k\winfleet\windows-exporter\artifacts.json') -Name 'windows-exporter'
$staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $root 'k\winfleet\staging\windows-exporter')
$source = Join-Path $staging 'windows_exporter-0.31.8-amd64.exe'
$binaryChanged = $false
if (-not (Test-WinfleetFileCurrent -Source $source -Destination $exporter)) {
    Suspend-WinfleetService -Name 'windows_exporter'
    $binaryChanged = Install-WinfleetFile -Source $source -Destination $exporter
    Write-WinfleetLog "installed windows_exporter $($artifact.Version)"
}
$null = Remove-WinfleetItem -Path $staging

$binaryPath = '"{0}" --web.listen-address={1} --collectors.enabled={2}' -f $exporter, $listen, $collectors
$service = Set-WinfleetService -Name 'windows_exporter' -BinaryPath $binaryPath -DisplayName 'windows_exporter' -Description 'winfleet: Prometheus exporter for Windows host metrics' -StartupType 'Automatic'
if (($binaryChanged -or $service.Changed) -and (Get-Service -Name 'windows_exporter').Status -eq 'Running') {
    Restart-WinfleetService -Name 'windows_exporter'
}
Resume-WinfleetService -Name 'windows_exporter'
exit 0
