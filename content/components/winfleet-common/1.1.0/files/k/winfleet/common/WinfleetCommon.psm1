# winfleet-common: the helpers every winfleet component uses. Each function is
# idempotent (safe to run again after a crash or reboot) and reports what it
# changed, so a component can restart a service only when its binary or config
# moved. Written for Windows PowerShell 5.1 and PowerShell 7 alike.
#
# Import from a component script:
#   Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
#
# Reboots: Enable-WinfleetFeature returns an object whose RestartNeeded is true
# when the feature was just enabled (or is pending a restart). The calling
# script finishes its other work and then ends with `exit 3010`, which the
# agent reads as "success, reboot required"; the agent restarts the host once
# at the end of the priority group and continues after it.

# Module functions do not see the caller's preference variables, so the
# module sets its own: every failure is terminating.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$script:LibDirectory = Join-Path $PSScriptRoot 'lib'
. (Join-Path $script:LibDirectory 'Core.ps1')
. (Join-Path $script:LibDirectory 'Download.ps1')
. (Join-Path $script:LibDirectory 'Files.ps1')
. (Join-Path $script:LibDirectory 'Services.ps1')
. (Join-Path $script:LibDirectory 'HostSettings.ps1')
. (Join-Path $script:LibDirectory 'Cluster.ps1')
. (Join-Path $script:LibDirectory 'Network.ps1')
. (Join-Path $script:LibDirectory 'Boot.ps1')

Export-ModuleMember -Function @(
    'Get-WinfleetRoot',
    'Get-WinfleetPath',
    'Get-WinfleetVariable',
    'Assert-WinfleetVariable',
    'Write-WinfleetLog',
    'Invoke-WinfleetNative',
    'Wait-WinfleetCondition',
    'Test-WinfleetFileHash',
    'Save-WinfleetDownload',
    'Get-WinfleetArtifact',
    'Resolve-WinfleetArtifactUrl',
    'Expand-WinfleetArtifact',
    'Test-WinfleetFileCurrent',
    'Install-WinfleetFile',
    'Set-WinfleetFileContent',
    'Set-WinfleetSecretFile',
    'Set-WinfleetRestrictedAcl',
    'Set-WinfleetDirectoryAcl',
    'Remove-WinfleetItem',
    'Get-WinfleetNssmPath',
    'Set-WinfleetService',
    'Set-WinfleetHostedService',
    'Remove-WinfleetService',
    'Start-WinfleetService',
    'Stop-WinfleetService',
    'Suspend-WinfleetService',
    'Resume-WinfleetService',
    'Restart-WinfleetService',
    'Set-WinfleetFirewallRule',
    'Remove-WinfleetFirewallRule',
    'Enable-WinfleetFeature',
    'Disable-WinfleetFeature',
    'Set-WinfleetRegistryValue',
    'Remove-WinfleetRegistryValue',
    'Add-WinfleetPathEntry',
    'Remove-WinfleetPathEntry',
    'Set-WinfleetMachineEnvironment',
    'Get-WinfleetProxyEnvironment',
    'Set-WinfleetServiceProxyEnvironment',
    'Remove-WinfleetMachineEnvironment',
    'Add-WinfleetDefenderExclusion',
    'Remove-WinfleetDefenderExclusion',
    'Set-WinfleetScheduledTask',
    'Remove-WinfleetScheduledTask',
    'Get-WinfleetClusterCA',
    'ConvertTo-WinfleetKubeconfig',
    'Import-WinfleetHns',
    'Test-WinfleetCalicoReady',
    'Wait-WinfleetNetworkReady',
    'Reset-WinfleetCalicoBootMarker',
    'Enter-WinfleetNodeLock',
    'Exit-WinfleetNodeLock',
    'Stop-WinfleetProcessTree',
    'Set-WinfleetHnsResetDone',
    'Test-WinfleetHnsResetDone',
    'Test-WinfleetDsrSupported',
    'Resolve-WinfleetDsr',
    'Wait-WinfleetServiceNeeds',
    'Start-WinfleetNodeServices',
    'Reset-WinfleetDirectoryAcl',
    'Remove-WinfleetOldLogs',
    'Test-WinfleetOsBuildFloor',
    'Test-WinfleetServiceNeed'
)
