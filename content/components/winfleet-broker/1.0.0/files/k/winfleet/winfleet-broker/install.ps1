# winfleet-broker install (and post_upgrade): the broker's wins-format config
# at \etc\rancher\wins\config: the host programs containers may start through
# the broker (process whitelist) and the host ports they may reach through its
# proxy (windows_exporter's 9796 by default). Only SYSTEM and Administrators
# may change it: whoever edits the whitelist chooses what runs on the host.
# The agent starts its broker once this file exists; a running broker takes a
# changed file on its next ReloadConfig or restart.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$configFile = Join-Path $root 'etc\rancher\wins\config'

$paths = @((Get-WinfleetVariable -Name 'BROKER_PROCESS_PATHS') -split ',' | ForEach-Object { $_.Trim() } | Where-Object { $_ -ne '' })
foreach ($path in $paths) {
    if (-not [System.IO.Path]::IsPathRooted($path) -or $path -notmatch '\.exe$') {
        throw "variable BROKER_PROCESS_PATHS holds '$path', which is not an absolute path to an .exe"
    }
}
$ports = @()
foreach ($port in ((Assert-WinfleetVariable -Name 'BROKER_PROXY_PORTS' -Pattern '^[0-9]+(,[0-9]+)*$' -Expected 'a comma-separated list of ports') -split ',')) {
    if ([int]$port -lt 1 -or [int]$port -gt 65535) {
        throw "variable BROKER_PROXY_PORTS holds $port, which is not a TCP port"
    }
    $ports += [int]$port
}
# wins >= 0.1.2 reads white_list with camelCase keys; so does the broker.
$config = [ordered]@{ white_list = [ordered]@{ processPaths = @($paths); proxyPorts = @($ports) } }
New-Item -ItemType Directory -Force -Path (Split-Path -Parent $configFile) | Out-Null
if (Set-WinfleetFileContent -Path $configFile -Content (ConvertTo-Json -InputObject $config -Depth 4)) {
    Write-WinfleetLog "wrote the broker config: $($paths.Count) process paths, ports $($ports -join ', ')"
}
Set-WinfleetRestrictedAcl -Path $configFile
exit 0
