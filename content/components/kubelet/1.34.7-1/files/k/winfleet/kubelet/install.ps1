# kubelet install (and post_upgrade): kubelet.exe from the pinned Kubernetes
# node release, its KubeletConfiguration (cluster DNS, the node taint when
# asked, Windows settings: no cgroups, no node allocatable enforcement, the
# containerd pipe) and the kubelet service (under NSSM for its logs), which
# depends on containerd and restarts on failure. The service starts
# automatically at boot and runs kubelet-service.ps1, which waits for what the
# kubelet needs (containerd's pipe, this boot's HNS reset, the CNI initialised
# since it, the node's credentials) before it runs the kubelet, so it may
# start in any order and a failed start is retried by the SCM.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$kubelet = Join-Path $root 'k\kubelet.exe'
$configFile = Join-Path $root 'var\lib\kubelet\config.yaml'
$kubeconfig = Join-Path $root 'etc\kubernetes\kubelet.conf'
$bootstrapKubeconfig = Join-Path $root 'etc\kubernetes\bootstrap-kubelet.conf'
$nodeName = (Assert-WinfleetVariable -Name 'WINFLEET_NODE_NAME' -Pattern '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$' -Expected 'a DNS-1123 host name').ToLowerInvariant()
$labels = Get-WinfleetVariable -Name 'KUBE_NODE_LABELS'
if ($labels -ne '' -and $labels -notmatch '^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*(,[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*)*$') {
    throw 'variable KUBE_NODE_LABELS is not a comma-separated list of key=value'
}
# The kubelet refuses (and exits on) kubernetes.io and k8s.io labels outside its own
# namespaces and the well-known ones.
$kubeletLabels = @('kubernetes.io/hostname', 'kubernetes.io/os', 'kubernetes.io/arch', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch', 'beta.kubernetes.io/instance-type', 'node.kubernetes.io/instance-type', 'topology.kubernetes.io/region', 'topology.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/region', 'failure-domain.beta.kubernetes.io/zone')
foreach ($pair in @($labels -split ',' | Where-Object { $_ -ne '' })) {
    $key = ($pair -split '=')[0]
    $prefix = ''
    if ($key.Contains('/')) {
        $prefix = ($key -split '/')[0]
    }
    $reserved = $prefix -match '(^|\.)(kubernetes\.io|k8s\.io)$'
    $allowed = ($kubeletLabels -contains $key) -or ($prefix -match '(^|\.)(kubelet\.kubernetes\.io|node\.kubernetes\.io)$')
    if ($reserved -and -not $allowed) {
        throw "variable KUBE_NODE_LABELS sets $key, a kubernetes.io/k8s.io label the kubelet may not set (it would refuse to start): use node.kubernetes.io/* or your own prefix"
    }
}
$nodeIp = Get-WinfleetVariable -Name 'KUBELET_NODE_IP'
if ($nodeIp -ne '' -and $nodeIp -notmatch '^[0-9a-fA-F.:]+(,[0-9a-fA-F.:]+)?$') {
    throw 'variable KUBELET_NODE_IP is not an IP address (or an IPv4,IPv6 pair)'
}
$clusterDns = Assert-WinfleetVariable -Name 'KUBE_CLUSTER_DNS' -Pattern '^[0-9a-fA-F.:]+(,[0-9a-fA-F.:]+)*$' -Expected 'a comma-separated list of IP addresses'
$clusterDomain = Assert-WinfleetVariable -Name 'KUBE_CLUSTER_DOMAIN' -Pattern '^[A-Za-z0-9.-]+$' -Expected 'a DNS domain'
$verbosity = Assert-WinfleetVariable -Name 'KUBELET_LOG_VERBOSITY' -Pattern '^[0-9]$' -Expected 'a digit'
# Calico IPAM gives the node's HNS network one block: at most its size less 4
# pods fit (Calico's Windows requirements: 60 for the default /26).
$maxPods = [int](Assert-WinfleetVariable -Name 'KUBELET_MAX_PODS' -Pattern '^[0-9]{1,4}$' -Expected 'a number of pods')
$blockSize = [int](Assert-WinfleetVariable -Name 'CALICO_IPAM_BLOCK_SIZE' -Pattern '^(2[0-9]|3[0-2])$' -Expected 'a prefix length from 20 to 32')
$podsPerBlock = [int][Math]::Pow(2, 32 - $blockSize) - 4
if ($maxPods -lt 1 -or $maxPods -gt $podsPerBlock) {
    throw "variable KUBELET_MAX_PODS is $maxPods, but a /$blockSize IPAM block holds $podsPerBlock pods (its size less 4): pods past that fail IPAM on this node"
}

$artifact = Get-WinfleetArtifact -Manifest (Join-Path $root 'k\winfleet\kubelet\artifacts.json') -Name 'kubernetes-node'
$staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $root 'k\winfleet\staging\kubelet')
$source = Join-Path $staging 'kubernetes\node\bin\kubelet.exe'
$binaryChanged = $false
if (-not (Test-WinfleetFileCurrent -Source $source -Destination $kubelet)) {
    Suspend-WinfleetService -Name 'kubelet'
    $binaryChanged = Install-WinfleetFile -Source $source -Destination $kubelet
    Write-WinfleetLog "installed kubelet $($artifact.Version)"
}
# kubectl from the same release, run with the node's own credentials: the calico
# component labels the node with it.
$kubectlSource = Join-Path $staging 'kubernetes\node\bin\kubectl.exe'
if (-not (Test-WinfleetFileCurrent -Source $kubectlSource -Destination (Join-Path $root 'k\kubectl.exe'))) {
    $null = Install-WinfleetFile -Source $kubectlSource -Destination (Join-Path $root 'k\kubectl.exe')
}
$null = Remove-WinfleetItem -Path $staging

# The kubelet's configuration: writable by SYSTEM and Administrators only; its
# client key (pki) readable by them alone. var\lib\kubelet itself keeps the
# ACL C:\ hands down: emptyDir volumes live under it (pods\) and inherit its
# ACL, and containers running as ContainerUser (a member of Users) must write
# to them. An earlier version restricted it: that is taken back here.
$null = Set-WinfleetDirectoryAcl -Path (Join-Path $root 'etc\kubernetes')
$null = Reset-WinfleetDirectoryAcl -Path (Join-Path $root 'var\lib\kubelet')
$null = Set-WinfleetDirectoryAcl -Path (Join-Path $root 'var\lib\kubelet\pki') -Private
foreach ($directory in @('var\lib\kubelet\pki', 'etc\kubernetes\manifests', 'etc\kubernetes\pki')) {
    New-Item -ItemType Directory -Force -Path (Join-Path $root $directory) | Out-Null
}

$taints = @()
if ((Get-WinfleetVariable -Name 'KUBE_REGISTER_TAINT' -Default 'false') -eq 'true') {
    $taints = @([ordered]@{ key = 'os'; value = 'windows'; effect = 'NoSchedule' })
}
# Written as JSON, which the kubelet reads as YAML: values are data here.
$configuration = [ordered]@{
    kind                           = 'KubeletConfiguration'
    apiVersion                     = 'kubelet.config.k8s.io/v1beta1'
    authentication                 = [ordered]@{
        anonymous = [ordered]@{ enabled = $false }
        webhook   = [ordered]@{ enabled = $true }
        x509      = [ordered]@{ clientCAFile = (Join-Path $root 'etc\kubernetes\pki\ca.crt') }
    }
    authorization                  = [ordered]@{ mode = 'Webhook' }
    clusterDNS                     = @($clusterDns -split ',')
    clusterDomain                  = $clusterDomain
    containerRuntimeEndpoint       = 'npipe://./pipe/containerd-containerd'
    staticPodPath                  = (Join-Path $root 'etc\kubernetes\manifests')
    rotateCertificates             = $true
    serverTLSBootstrap             = $false
    # Windows has no cgroups and no resolv.conf. Node allocatable is not enforced:
    # an empty list, as the kubelet refuses any enforcement but 'none' without
    # cgroupsPerQOS, and defaults an absent list to ['pods'].
    cgroupsPerQOS                  = $false
    enforceNodeAllocatable         = @()
    resolvConf                     = ''
    systemReserved                 = [ordered]@{ cpu = '500m'; memory = '2Gi'; 'ephemeral-storage' = '1Gi' }
    # evictionHard replaces the kubelet's defaults as a whole, so it repeats
    # them: the Windows kubelet's are memory 500Mi (100Mi is Linux's), nodefs
    # 10%, imagefs 15% (pkg/kubelet/eviction/defaults_windows.go).
    evictionHard                   = [ordered]@{ 'memory.available' = '500Mi'; 'nodefs.available' = '10%'; 'imagefs.available' = '15%' }
    maxPods                        = $maxPods
    registerWithTaints             = $taints
}
$configChanged = Set-WinfleetFileContent -Path $configFile -Content (ConvertTo-Json -InputObject $configuration -Depth 6)

$arguments = @(
    "--config=`"$configFile`"",
    "--bootstrap-kubeconfig=`"$bootstrapKubeconfig`"",
    "--kubeconfig=`"$kubeconfig`"",
    ('--cert-dir="' + (Join-Path $root 'var\lib\kubelet\pki') + '"'),
    "--hostname-override=$nodeName",
    "--v=$verbosity"
)
if ($labels -ne '') {
    $arguments += "--node-labels=$labels"
}
# On a host with several adapters the kubelet may pick the wrong address (the vSwitch's is the one to use).
if ($nodeIp -ne '') {
    $arguments += "--node-ip=$nodeIp"
}
$extra = Get-WinfleetVariable -Name 'KUBELET_EXTRA_ARGS'
if ($extra -ne '') {
    $arguments += $extra
}
# The wrapper reads the kubelet's arguments from a file, so a change of them is
# a change of the service's configuration (the service is restarted below).
$argumentsFile = Join-Path $root 'k\winfleet\kubelet\kubelet-arguments.json'
$argumentsChanged = Set-WinfleetFileContent -Path $argumentsFile -Content (ConvertTo-Json -InputObject @($arguments))
$environment = Get-WinfleetProxyEnvironment
$environment.WINFLEET_ROOT = $root
$environment.KUBELET_ARGUMENTS_FILE = $argumentsFile
$powershell = Join-Path $env:SystemRoot 'System32\WindowsPowerShell\v1.0\powershell.exe'
$wrapper = Join-Path $root 'k\winfleet\kubelet\kubelet-service.ps1'
$service = Set-WinfleetHostedService -Name 'kubelet' -Program $powershell -Arguments ('-NoProfile -NonInteractive -ExecutionPolicy Bypass -File "' + $wrapper + '"') -WorkingDirectory (Join-Path $root 'k') -LogFile (Join-Path $root 'var\log\kubelet\kubelet.log') -Environment $environment -DisplayName 'kubelet' -Description 'winfleet: Kubernetes node agent' -StartupType 'Automatic' -DependsOn @('containerd')
$null = Add-WinfleetPathEntry -Path (Join-Path $root 'k')

$joined = (Test-Path -LiteralPath $kubeconfig) -or (Test-Path -LiteralPath $bootstrapKubeconfig)
if ($joined) {
    if (($binaryChanged -or $configChanged -or $argumentsChanged -or $service.Changed) -and (Get-Service -Name 'kubelet').Status -eq 'Running') {
        Restart-WinfleetService -Name 'kubelet'
    }
    Resume-WinfleetService -Name 'kubelet'
}
else {
    Write-WinfleetLog 'the kubelet is registered; it starts once the node joins a cluster'
}
exit 0
