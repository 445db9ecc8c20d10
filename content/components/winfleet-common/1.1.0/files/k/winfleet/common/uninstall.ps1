# winfleet-common uninstall: runs last (its uninstall priority is the highest),
# once no component's service uses NSSM any more. The agent removes the NSSM
# binary, the download cache and the staging area (this component's `files`).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

$nssm = Get-WinfleetPath -Relative 'k\winfleet\bin\nssm.exe'
$users = @(Get-CimInstance -ClassName Win32_Service | Where-Object { $_.PathName -like "*$nssm*" } | ForEach-Object { $_.Name })
if ($users.Count -gt 0) {
    throw "services still run under NSSM ($($users -join ', ')): uninstall the components that own them first"
}
exit 0
