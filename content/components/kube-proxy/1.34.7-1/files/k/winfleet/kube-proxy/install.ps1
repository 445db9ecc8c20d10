# kube-proxy install (and post_upgrade): kube-proxy.exe from the pinned
# Kubernetes node release, kube-proxy's own credentials (checked by
# SelfSubjectAccessReview before anything starts it) and the
# winfleet-kube-proxy service (under NSSM, depending on the kubelet, restarted
# on failure, started automatically at boot). Not named kube-proxy: Calico's
# operator install removes any service of that name each time its
# calico-node-windows pod starts (its uninstall-calico init container), so an
# earlier content's kube-proxy service is replaced by this one. The service runs kube-proxy-service.ps1, which waits
# for this boot's HNS reset and the CNI's HNS network and writes kube-proxy's
# configuration with the overlay's source VIP, a value only known at run time.
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
$kubectl = Join-Path $staging 'kubernetes\node\bin\kubectl.exe'
$binaryChanged = $false
if (-not (Test-WinfleetFileCurrent -Source $source -Destination $kubeProxy)) {
    Suspend-WinfleetService -Name 'winfleet-kube-proxy'
    $binaryChanged = Install-WinfleetFile -Source $source -Destination $kubeProxy
    Write-WinfleetLog "installed kube-proxy $($artifact.Version)"
}

# kube-proxy's own credentials: a kubeconfig the stack provides, or the token of
# the service account ClusterJoin provisions (with the cluster CA join-kubeadm
# verified). Only without either, the node's own, which a stock kubeadm cluster
# does not let list Services or EndpointSlices: the preflight below proves the
# cluster grants them before kube-proxy is left to log "forbidden" forever.
$nodeKubeconfig = Join-Path $root 'etc\kubernetes\kubelet.conf'
$ownKubeconfig = Join-Path $root 'etc\kubernetes\kube-proxy.conf'
$kubeconfig = $nodeKubeconfig
$identity = 'the node''s own credentials (kubelet.conf)'
$kubeconfigChanged = $false
$proxyToken = Get-WinfleetVariable -Name 'KUBE_PROXY_TOKEN'
if ((Get-WinfleetVariable -Name 'KUBE_PROXY_KUBECONFIG') -ne '') {
    $kubeconfigChanged = Set-WinfleetSecretFile -Path $ownKubeconfig -Content $env:KUBE_PROXY_KUBECONFIG
    $kubeconfig = $ownKubeconfig
    $identity = 'KUBE_PROXY_KUBECONFIG'
}
elseif ($proxyToken -ne '') {
    $apiServer = Assert-WinfleetVariable -Name 'KUBE_API_SERVER' -Pattern '^https://[A-Za-z0-9.:\[\]-]+(:[0-9]+)?/?$' -Expected 'the https:// URL of the API server'
    $caFile = Join-Path $root 'etc\kubernetes\pki\ca.crt'
    if (-not (Test-Path -LiteralPath $caFile)) {
        throw "KUBE_PROXY_TOKEN needs the cluster CA at $caFile, which join-kubeadm writes: join the node first"
    }
    $proxyConfig = ConvertTo-WinfleetKubeconfig -Server $apiServer.TrimEnd('/') -CertificateAuthorityPath $caFile -UserName 'winfleet-kube-proxy' -Token $proxyToken
    $kubeconfigChanged = Set-WinfleetSecretFile -Path $ownKubeconfig -Content $proxyConfig
    $kubeconfig = $ownKubeconfig
    $identity = 'KUBE_PROXY_TOKEN (the winfleet-kube-proxy service account)'
}
else {
    $null = Remove-WinfleetItem -Path $ownKubeconfig
}

# Preflight: SelfSubjectAccessReviews (kubectl auth can-i) with kube-proxy's
# credentials for what it reads; each must be allowed.
if (Test-Path -LiteralPath $kubeconfig) {
    if (-not (Test-Path -LiteralPath $kubectl)) {
        throw "kubectl.exe is not in the Kubernetes node release ($kubectl): cannot check kube-proxy's access"
    }
    $denied = @()
    foreach ($access in @('list services', 'watch services', 'list endpointslices.discovery.k8s.io', 'watch endpointslices.discovery.k8s.io', 'get nodes')) {
        $verb, $resource = $access -split ' '
        $answer = @(Invoke-WinfleetNative -FilePath $kubectl -ArgumentList @('auth', 'can-i', $verb, $resource, "--kubeconfig=$kubeconfig") -SuccessExitCodes @(0, 1))
        if (-not ($answer -contains 'yes')) {
            $denied += "$access ($(($answer | Select-Object -Last 1)))"
        }
    }
    if ($denied.Count -gt 0) {
        throw ("kube-proxy's credentials, $identity, may not: " + ($denied -join '; ') + '. Give kube-proxy its own identity: KUBE_PROXY_TOKEN (ClusterJoin provisions the winfleet-kube-proxy service account) or KUBE_PROXY_KUBECONFIG; or bind the system:node-proxier ClusterRole to the system:nodes group')
    }
    Write-WinfleetLog "kube-proxy runs as $identity, which may list and watch Services and EndpointSlices"
}
else {
    Write-WinfleetLog "kube-proxy's access is not checked yet: $kubeconfig does not exist (the node has not joined)"
}
$null = Remove-WinfleetItem -Path $staging

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
# Direct server return: Calico's policy sees a Service's real client only with
# it, and a pod reaches itself through its own Service only with it. 'auto'
# (the default) turns it on wherever the build supports it.
$environment.KUBE_PROXY_ENABLE_DSR = ([string](Resolve-WinfleetDsr -Name 'KUBE_PROXY_ENABLE_DSR' -Value (Get-WinfleetVariable -Name 'KUBE_PROXY_ENABLE_DSR' -Default 'auto'))).ToLowerInvariant()
# The service an earlier content version registered under Calico's name, and
# what its pre_upgrade recorded of it: this service takes its place.
$null = Remove-WinfleetService -Name 'kube-proxy'
$null = Remove-WinfleetItem -Path (Join-Path $root 'k\winfleet\state\suspended-kube-proxy.json')
$service = Set-WinfleetHostedService -Name 'winfleet-kube-proxy' -Program $powershell -Arguments ('-NoProfile -NonInteractive -ExecutionPolicy Bypass -File "' + $wrapper + '"') -WorkingDirectory (Join-Path $root 'k') -LogFile (Join-Path $root 'var\log\kube-proxy\kube-proxy.log') -Environment $environment -DisplayName 'kube-proxy' -Description 'winfleet: Kubernetes service proxy (HNS load balancers)' -StartupType 'Automatic' -DependsOn @('kubelet')

if (Test-Path -LiteralPath (Join-Path $root 'etc\kubernetes\kubelet.conf')) {
    if (($binaryChanged -or $kubeconfigChanged -or $service.Changed) -and (Get-Service -Name 'winfleet-kube-proxy').Status -eq 'Running') {
        Restart-WinfleetService -Name 'winfleet-kube-proxy'
    }
    Resume-WinfleetService -Name 'winfleet-kube-proxy'
}
else {
    Write-WinfleetLog 'kube-proxy is registered; it starts once the node has joined'
}
exit 0
