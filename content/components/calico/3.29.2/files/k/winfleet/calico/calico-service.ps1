# What the CalicoNode and CalicoFelix services run: waits for this boot's HNS
# reset (Felix also for Calico's node start to finish), then runs Calico's own
# service script (node\node-service.ps1 or felix\felix-service.ps1) in the
# foreground (a child PowerShell), so the services may start automatically at
# boot in any order.
param(
    [Parameter(Mandatory = $true)][ValidateSet('node', 'felix')][string]$Role
)
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
if ($Role -eq 'felix') {
    Wait-WinfleetServiceNeeds -Needs @('hns-reset', 'network')
}
else {
    Wait-WinfleetServiceNeeds -Needs @('hns-reset')
}
$script = Join-Path $root "CalicoWindows\$Role\$Role-service.ps1"
$powershell = Join-Path $env:SystemRoot 'System32\WindowsPowerShell\v1.0\powershell.exe'
Write-WinfleetLog "starting Calico's $Role service script"
# A child PowerShell, as the service ran it before: Calico's script sets its
# own preferences and exits with its own code, which is the service's.
& $powershell -NoProfile -NonInteractive -ExecutionPolicy Bypass -File $script
exit $LASTEXITCODE
