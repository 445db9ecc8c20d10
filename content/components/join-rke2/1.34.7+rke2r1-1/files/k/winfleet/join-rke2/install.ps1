# join-rke2 install (and post_upgrade): the RKE2 agent from the pinned
# release, laid out as RKE2's install.ps1 does (under \usr\local), its config
# with the server URL and join token (the token only ever in that file,
# readable by SYSTEM and Administrators), and the rke2 service, which runs
# containerd, the kubelet, kube-proxy and the CNI itself. Waits until the
# agent's kubelet has credentials.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$prefix = Join-Path $root 'usr\local'
$rke2 = Join-Path $prefix 'bin\rke2.exe'
$configFile = Join-Path $root 'etc\rancher\rke2\config.yaml'
$dataDirectory = Join-Path $root 'var\lib\rancher\rke2'
$server = Assert-WinfleetVariable -Name 'RKE2_SERVER' -Pattern '^https://[A-Za-z0-9.:\[\]-]+(:[0-9]+)?/?$' -Expected 'the https:// URL of the RKE2 server (port 9345)'
$token = Assert-WinfleetVariable -Name 'RKE2_TOKEN' -Expected 'the RKE2 join token'
$nodeName = (Assert-WinfleetVariable -Name 'WINFLEET_NODE_NAME' -Pattern '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$' -Expected 'a DNS-1123 host name').ToLowerInvariant()
$labels = Get-WinfleetVariable -Name 'KUBE_NODE_LABELS'
if ($labels -ne '' -and $labels -notmatch '^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*(,[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*)*$') {
    throw 'variable KUBE_NODE_LABELS is not a comma-separated list of key=value'
}

$artifact = Get-WinfleetArtifact -Manifest (Join-Path $root 'k\winfleet\join-rke2\artifacts.json') -Name 'rke2'
$staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $root 'k\winfleet\staging\join-rke2')
$binaryChanged = $false
if (-not (Test-WinfleetFileCurrent -Source (Join-Path $staging 'bin\rke2.exe') -Destination $rke2)) {
    Suspend-WinfleetService -Name 'rke2'
    $binaryChanged = $true
}
foreach ($file in @('bin\rke2.exe', 'bin\rke2-uninstall.ps1')) {
    $null = Install-WinfleetFile -Source (Join-Path $staging $file) -Destination (Join-Path $prefix $file)
}
foreach ($directory in @('share\rke2', 'share\rke2-windows')) {
    if (Test-Path -LiteralPath (Join-Path $staging $directory)) {
        $null = Remove-WinfleetItem -Path (Join-Path $prefix $directory)
        New-Item -ItemType Directory -Force -Path (Split-Path -Parent (Join-Path $prefix $directory)) | Out-Null
        Copy-Item -LiteralPath (Join-Path $staging $directory) -Destination (Join-Path $prefix $directory) -Recurse -Force
    }
}
$null = Remove-WinfleetItem -Path $staging
if ($binaryChanged) {
    Write-WinfleetLog "installed RKE2 $($artifact.Version)"
}

# JSON, which RKE2 reads as YAML: the values are data, never parsed as code.
$config = [ordered]@{ server = $server.TrimEnd('/'); token = $token; 'node-name' = $nodeName }
if ($labels -ne '') {
    $config['node-label'] = @($labels -split ',')
}
if ((Get-WinfleetVariable -Name 'KUBE_REGISTER_TAINT' -Default 'false') -eq 'true') {
    $config['node-taint'] = @('os=windows:NoSchedule')
}
$configChanged = Set-WinfleetSecretFile -Path $configFile -Content (ConvertTo-Json -InputObject $config -Depth 4)

# As `rke2 agent service --add` registers it: own process, automatic, restart after 30 s.
$service = Set-WinfleetService -Name 'rke2' -BinaryPath ('"{0}" agent --config "{1}"' -f $rke2, $configFile) -DisplayName 'rke2' -Description 'winfleet: Rancher Kubernetes Engine v2 (agent)' -StartupType 'Automatic' -RestartDelaysSeconds @(30) -ResetPeriodSeconds 30
# Both go on the machine PATH: only SYSTEM and Administrators may write there.
$null = Set-WinfleetDirectoryAcl -Path $prefix
$null = Set-WinfleetDirectoryAcl -Path (Join-Path $dataDirectory 'bin')
$null = Add-WinfleetPathEntry -Path (Join-Path $prefix 'bin')
$null = Add-WinfleetPathEntry -Path (Join-Path $dataDirectory 'bin')
# The join and image pulls go through the proxy prereqs set, with no reboot.
$proxyChanged = Set-WinfleetServiceProxyEnvironment -Name 'rke2'

if (($configChanged -or $service.Changed -or $proxyChanged) -and (Get-Service -Name 'rke2').Status -eq 'Running') {
    Restart-WinfleetService -Name 'rke2'
}
Resume-WinfleetService -Name 'rke2'
$kubeconfig = Join-Path $dataDirectory 'agent\kubelet.kubeconfig'
Wait-WinfleetCondition -Description 'the RKE2 agent to join (agent\kubelet.kubeconfig)' -TimeoutSeconds 1200 -IntervalSeconds 10 -Condition {
    Test-Path -LiteralPath $kubeconfig
}
Write-WinfleetLog "joined the RKE2 cluster at $server"
exit 0
