# winfleet-broker uninstall: nothing to stop (the broker lives in the agent);
# the agent removes the config (this component's files), and a broker started
# without it refuses every process and port.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
Write-WinfleetLog 'the broker config goes with this component'
exit 0
