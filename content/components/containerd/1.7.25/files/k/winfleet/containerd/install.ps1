# containerd install (and post_upgrade): the pinned containerd release, its
# config (CNI binaries in \opt\cni\bin, CNI configs in \etc\cni\net.d, what
# kubelet and Calico expect), and the containerd Windows service with restart
# on failure. A binary or config change restarts containerd and whatever ran
# on top of it.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$installDirectory = Join-Path $root 'Program Files\containerd'
$containerd = Join-Path $installDirectory 'containerd.exe'
$configFile = Join-Path $installDirectory 'config.toml'
$cniBin = Join-Path $root 'opt\cni\bin'
$cniConf = Join-Path $root 'etc\cni\net.d'

$artifact = Get-WinfleetArtifact -Manifest (Join-Path $root 'k\winfleet\containerd\artifacts.json') -Name 'containerd'
$staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $root 'k\winfleet\staging\containerd')
$binaries = @(Get-ChildItem -LiteralPath (Join-Path $staging 'bin') -Filter '*.exe')
if ($binaries.Count -eq 0) {
    throw "the containerd $($artifact.Version) archive holds no bin\*.exe"
}
$stale = @($binaries | Where-Object { -not (Test-WinfleetFileCurrent -Source $_.FullName -Destination (Join-Path $installDirectory $_.Name)) })
if ($stale.Count -gt 0) {
    # A running containerd.exe cannot be replaced.
    Suspend-WinfleetService -Name 'containerd'
    foreach ($binary in $binaries) {
        $null = Install-WinfleetFile -Source $binary.FullName -Destination (Join-Path $installDirectory $binary.Name)
    }
    Write-WinfleetLog "installed containerd $($artifact.Version)"
}
$null = Remove-WinfleetItem -Path $staging

# containerd (SYSTEM) loads the first CNI config and runs the plugins it names:
# only SYSTEM and Administrators may write either directory.
$null = Set-WinfleetDirectoryAcl -Path (Join-Path $root 'opt\cni')
$null = Set-WinfleetDirectoryAcl -Path (Join-Path $root 'etc\cni')
New-Item -ItemType Directory -Force -Path $cniBin, $cniConf | Out-Null

# containerd's own defaults for this version, with the CNI directories, its
# state under the content root and (optionally) the sandbox image replaced.
# TOML literal strings ('...') take Windows paths without escaping.
$toml = (Invoke-WinfleetNative -FilePath $containerd -ArgumentList @('config', 'default')) -join "`n"
$toml = $toml -replace '(?m)^(\s*)bin_dir = .*$', "`$1bin_dir = '$cniBin'"
$toml = $toml -replace '(?m)^(\s*)conf_dir = .*$', "`$1conf_dir = '$cniConf'"
$toml = $toml -replace '(?m)^root = .*$', ("root = '" + (Join-Path $root 'ProgramData\containerd\root') + "'")
$toml = $toml -replace '(?m)^state = .*$', ("state = '" + (Join-Path $root 'ProgramData\containerd\state') + "'")
$sandboxImage = Get-WinfleetVariable -Name 'CONTAINERD_SANDBOX_IMAGE'
if ($sandboxImage -ne '') {
    if ($sandboxImage -notmatch '^[A-Za-z0-9][A-Za-z0-9./:@_-]*$') {
        throw 'variable CONTAINERD_SANDBOX_IMAGE is not an image reference'
    }
    $toml = $toml -replace '(?m)^(\s*)sandbox_image = .*$', "`$1sandbox_image = '$sandboxImage'"
}
$configChanged = Set-WinfleetFileContent -Path $configFile -Content ($toml + "`n")

$logFile = Join-Path $root 'var\log\containerd\containerd.log'
$binaryPath = '"{0}" --run-service --config "{1}" --log-file "{2}" --log-level {3}' -f $containerd, $configFile, $logFile, (Get-WinfleetVariable -Name 'CONTAINERD_LOG_LEVEL' -Default 'info')
$service = Set-WinfleetService -Name 'containerd' -BinaryPath $binaryPath -DisplayName 'containerd' -Description 'winfleet: containerd container runtime' -StartupType 'Automatic' -RestartDelaysSeconds @(5, 10, 30)
$null = Add-WinfleetPathEntry -Path $installDirectory
# Image pulls go through the proxy prereqs set, from the next start on, with no reboot.
$proxyChanged = Set-WinfleetServiceProxyEnvironment -Name 'containerd'

if (($configChanged -or $service.Changed -or $proxyChanged) -and (Get-Service -Name 'containerd').Status -eq 'Running') {
    Restart-WinfleetService -Name 'containerd'
}
Resume-WinfleetService -Name 'containerd'
Wait-WinfleetCondition -Description 'the containerd pipe' -TimeoutSeconds 60 -Condition {
    Test-Path -LiteralPath '\\.\pipe\containerd-containerd'
}
exit 0
