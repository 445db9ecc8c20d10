# containerd install (and post_upgrade): the pinned containerd release, its
# config (CNI binaries in \opt\cni\bin, CNI configs in \etc\cni\net.d, what
# kubelet and Calico expect), and the containerd service (under NSSM, which
# rotates its log; started automatically, restarted on failure). A binary or
# config change restarts containerd and whatever ran on top of it.
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

# The configuration, whole: containerd decodes it onto its own defaults (so
# what is not written keeps the default of this version), and nothing depends
# on editing the output of `containerd config default` with patterns that can
# silently match nothing. TOML literal strings ('...') take Windows paths
# without escaping. scripts/engines/containerd checks the rendered file with
# containerd's own loader (`npm test`).
$sandboxImage = Get-WinfleetVariable -Name 'CONTAINERD_SANDBOX_IMAGE'
if ($sandboxImage -notmatch '^[A-Za-z0-9][A-Za-z0-9./:@_-]*$') {
    throw 'variable CONTAINERD_SANDBOX_IMAGE is not an image reference'
}
$stateRoot = Join-Path $root 'ProgramData\containerd\root'
$stateDirectory = Join-Path $root 'ProgramData\containerd\state'
$toml = @"
version = 2
root = '$stateRoot'
state = '$stateDirectory'

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = '$sandboxImage'

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = '$cniBin'
    conf_dir = '$cniConf'
"@
$configChanged = Set-WinfleetFileContent -Path $configFile -Content ($toml + "`n")

# Under NSSM, not as its own service with --log-file: containerd never rotates
# the file it opens, while NSSM rotates what it writes (10 MB) and the
# log-retention task deletes the rotated logs past their age.
$arguments = '--config "{0}" --log-level {1}' -f $configFile, (Get-WinfleetVariable -Name 'CONTAINERD_LOG_LEVEL' -Default 'info')
$service = Set-WinfleetHostedService -Name 'containerd' -Program $containerd -Arguments $arguments -WorkingDirectory $installDirectory -LogFile (Join-Path $root 'var\log\containerd\containerd.log') -Environment (Get-WinfleetProxyEnvironment) -DisplayName 'containerd' -Description 'winfleet: containerd container runtime' -StartupType 'Automatic'
$null = Add-WinfleetPathEntry -Path $installDirectory
# Image pulls go through the proxy prereqs set, from the next start on, with no reboot.
$proxyChanged = Set-WinfleetServiceProxyEnvironment -Name 'containerd' -Hosted

if (($configChanged -or $service.Changed -or $proxyChanged) -and (Get-Service -Name 'containerd').Status -eq 'Running') {
    Restart-WinfleetService -Name 'containerd'
}
Resume-WinfleetService -Name 'containerd'
Wait-WinfleetCondition -Description 'the containerd pipe' -TimeoutSeconds 60 -Condition {
    Test-Path -LiteralPath '\\.\pipe\containerd-containerd'
}
exit 0
