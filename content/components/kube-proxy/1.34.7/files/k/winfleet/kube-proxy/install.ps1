# kube-proxy install (and post_upgrade): kube-proxy.exe from the pinned
# Kubernetes node release and the kube-proxy service (under NSSM, depending
# on the kubelet, restarted on failure). The service runs
# kube-proxy-service.ps1, which waits for the CNI's HNS network and passes
# kube-proxy the overlay's source VIP, a value only known at run time.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$kubeProxy = Join-Path $root 'k\kube-proxy.exe'
$nodeName = (Assert-WinfleetVariable -Name 'WINFLEET_NODE_NAME' -Pattern '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$' -Expected 'a DNS-1123 host name').ToLowerInvariant()
$network = Assert-WinfleetVariable -Name 'KUBE_PROXY_NETWORK_NAME' -Pattern '^[A-Za-z0-9_.-]+$' -Expected 'an HNS network name'
$clusterCidr = Get-WinfleetVariable -Name 'KUBE_CLUSTER_CIDR'
if ($clusterCidr -ne '' -and $clusterCidr -notmatch '^[0-9a-fA-F.:/]+(,[0-9a-fA-F.:/]+)*$') {
    throw 'variable KUBE_CLUSTER_CIDR is not a comma-separated list of CIDRs'
}
$featureGates = Get-WinfleetVariable -Name 'KUBE_PROXY_FEATURE_GATES'
if ($featureGates -ne '' -and $featureGates -notmatch '^[A-Za-z0-9]+=(true|false)(,[A-Za-z0-9]+=(true|false))*$') {
    throw 'variable KUBE_PROXY_FEATURE_GATES is not a comma-separated list of Gate=true|false'
}
$verbosity = Assert-WinfleetVariable -Name 'KUBE_PROXY_LOG_VERBOSITY' -Pattern '^[0-9]$' -Expected 'a digit'

$artifact = Get-WinfleetArtifact -Manifest (Join-Path $root 'k\winfleet\kube-proxy\artifacts.json') -Name 'kubernetes-node'
$staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $root 'k\winfleet\staging\kube-proxy')
$source = Join-Path $staging 'kubernetes\node\bin\kube-proxy.exe'
$binaryChanged = $false
if (-not (Test-WinfleetFileCurrent -Source $source -Destination $kubeProxy)) {
    Suspend-WinfleetService -Name 'kube-proxy'
    $binaryChanged = Install-WinfleetFile -Source $source -Destination $kubeProxy
    Write-WinfleetLog "installed kube-proxy $($artifact.Version)"
}
$null = Remove-WinfleetItem -Path $staging

# kube-proxy's own credentials when the stack provides them; otherwise the
# node's, which needs the cluster to grant the system:nodes group the
# system:node-proxier role.
$kubeconfig = Join-Path $root 'etc\kubernetes\kubelet.conf'
$ownKubeconfig = Join-Path $root 'etc\kubernetes\kube-proxy.conf'
if ((Get-WinfleetVariable -Name 'KUBE_PROXY_KUBECONFIG') -ne '') {
    $null = Set-WinfleetSecretFile -Path $ownKubeconfig -Content $env:KUBE_PROXY_KUBECONFIG
    $kubeconfig = $ownKubeconfig
}
else {
    $null = Remove-WinfleetItem -Path $ownKubeconfig
}

$powershell = Join-Path $env:SystemRoot 'System32\WindowsPowerShell\v1.0\powershell.exe'
$wrapper = Join-Path $root 'k\winfleet\kube-proxy\kube-proxy-service.ps1'
$environment = @{
    WINFLEET_ROOT             = $root
    KUBE_PROXY_NODE_NAME      = $nodeName
    KUBE_PROXY_KUBECONFIG_PATH = $kubeconfig
    KUBE_PROXY_NETWORK_NAME   = $network
    KUBE_PROXY_LOG_VERBOSITY  = $verbosity
}
if ($clusterCidr -ne '') {
    $environment.KUBE_CLUSTER_CIDR = $clusterCidr
}
if ($featureGates -ne '') {
    $environment.KUBE_PROXY_FEATURE_GATES = $featureGates
}
if ((Get-WinfleetVariable -Name 'KUBE_PROXY_ENABLE_DSR' -Default 'false') -eq 'true') {
    $environment.KUBE_PROXY_ENABLE_DSR = 'true'
}
$service = Set-WinfleetHostedService -Name 'kube-proxy' -Program $powershell -Arguments ('-NoProfile -NonInteractive -ExecutionPolicy Bypass -File "' + $wrapper + '"') -WorkingDirectory (Join-Path $root 'k') -LogFile (Join-Path $root 'var\log\kube-proxy\kube-proxy.log') -Environment $environment -DisplayName 'kube-proxy' -Description 'winfleet: Kubernetes service proxy (HNS load balancers)' -StartupType 'Automatic' -DependsOn @('kubelet')

if (Test-Path -LiteralPath (Join-Path $root 'etc\kubernetes\kubelet.conf')) {
    if (($binaryChanged -or $service.Changed) -and (Get-Service -Name 'kube-proxy').Status -eq 'Running') {
        Restart-WinfleetService -Name 'kube-proxy'
    }
    Resume-WinfleetService -Name 'kube-proxy'
}
else {
    Write-WinfleetLog 'kube-proxy is registered; it starts once the node has joined'
}
exit 0
