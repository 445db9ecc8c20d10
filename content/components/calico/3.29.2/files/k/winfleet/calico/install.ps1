# calico install (and post_upgrade): Calico for Windows (VXLAN, Kubernetes
# datastore) from the pinned release: its node and Felix services (Calico's
# own service scripts, under NSSM, configured through their environment), its
# CNI plugin and CNI config, and its kubeconfig (a secret: CALICO_KUBECONFIG,
# or one written from CALICO_TOKEN, the token of the service account ClusterJoin
# provisions with least privilege). Calico creates the HNS networks and the host endpoint
# kube-proxy uses as its source VIP.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$calicoDirectory = Join-Path $root 'CalicoWindows'
$marker = Join-Path $calicoDirectory 'winfleet-artifact.txt'
$kubeconfigFile = Join-Path $calicoDirectory 'calico-kube-config'
$cniBin = Join-Path $root 'opt\cni\bin'
$cniConf = Join-Path $root 'etc\cni\net.d'
$nodeName = (Assert-WinfleetVariable -Name 'WINFLEET_NODE_NAME' -Pattern '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$' -Expected 'a DNS-1123 host name').ToLowerInvariant()
$serviceCidr = Assert-WinfleetVariable -Name 'KUBE_SERVICE_CIDR' -Pattern '^[0-9a-fA-F.:]+/[0-9]+$' -Expected 'a CIDR'
$clusterDns = Assert-WinfleetVariable -Name 'KUBE_CLUSTER_DNS' -Pattern '^[0-9a-fA-F.:]+(,[0-9a-fA-F.:]+)*$' -Expected 'a comma-separated list of IP addresses'
$clusterDomain = Assert-WinfleetVariable -Name 'KUBE_CLUSTER_DOMAIN' -Pattern '^[A-Za-z0-9.-]+$' -Expected 'a DNS domain'
$vni = Assert-WinfleetVariable -Name 'CALICO_VXLAN_VNI' -Pattern '^[0-9]+$' -Expected 'a number'
if ([int]$vni -lt 4096) {
    throw 'variable CALICO_VXLAN_VNI is below 4096, which Windows does not support (set the same VNI in the cluster FelixConfiguration)'
}
$adapter = Get-WinfleetVariable -Name 'CALICO_VXLAN_ADAPTER'
$nodeIp = Assert-WinfleetVariable -Name 'CALICO_NODE_IP' -Pattern '^(autodetect|[0-9a-fA-F.:]+)$' -Expected "'autodetect' or an IP address"
# Calico's own identity: a kubeconfig the stack provides, or the token of the
# winfleet-calico-node service account ClusterJoin provisions (with the cluster CA
# join-kubeadm verified).
$kubeconfig = Get-WinfleetVariable -Name 'CALICO_KUBECONFIG'
if ($kubeconfig -eq '') {
    $calicoToken = Get-WinfleetVariable -Name 'CALICO_TOKEN'
    if ($calicoToken -eq '') {
        throw 'Calico needs its own identity: set CALICO_TOKEN (ClusterJoin provisions the winfleet-calico-node service account and passes its token) or CALICO_KUBECONFIG'
    }
    $apiServer = Assert-WinfleetVariable -Name 'KUBE_API_SERVER' -Pattern '^https://[A-Za-z0-9.:\[\]-]+(:[0-9]+)?/?$' -Expected 'the https:// URL of the API server'
    $caFile = Join-Path $root 'etc\kubernetes\pki\ca.crt'
    if (-not (Test-Path -LiteralPath $caFile)) {
        throw "CALICO_TOKEN needs the cluster CA at $caFile, which join-kubeadm writes: join the node first"
    }
    $kubeconfig = ConvertTo-WinfleetKubeconfig -Server $apiServer.TrimEnd('/') -CertificateAuthorityPath $caFile -UserName 'winfleet-calico-node' -Token $calicoToken
}

$artifact = Get-WinfleetArtifact -Manifest (Join-Path $root 'k\winfleet\calico\artifacts.json') -Name 'calico-windows'
$current = ''
if (Test-Path -LiteralPath $marker) {
    $current = (Get-Content -Raw -LiteralPath $marker).Trim()
}
$packageChanged = $current -ne $artifact.Hash
if ($packageChanged) {
    $staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $root 'k\winfleet\staging\calico')
    Suspend-WinfleetService -Name 'CalicoNode'
    $null = Remove-WinfleetItem -Path $calicoDirectory
    # SYSTEM runs Calico's scripts from here: only SYSTEM and Administrators
    # may write, before anything is copied in (C:\ hands Users create rights).
    $null = Set-WinfleetDirectoryAcl -Path $calicoDirectory
    Copy-Item -Path (Join-Path (Join-Path $staging 'CalicoWindows') '*') -Destination $calicoDirectory -Recurse -Force
    $null = Set-WinfleetFileContent -Path $marker -Content $artifact.Hash
    $null = Remove-WinfleetItem -Path $staging
    Write-WinfleetLog "installed Calico for Windows $($artifact.Version)"
}
$null = Set-WinfleetDirectoryAcl -Path $calicoDirectory
$kubeconfigChanged = Set-WinfleetSecretFile -Path $kubeconfigFile -Content $kubeconfig

# The CNI plugin and its config (what Calico's Install-CNIPlugin writes, as data).
New-Item -ItemType Directory -Force -Path $cniBin, $cniConf | Out-Null
$pluginChanged = $false
foreach ($plugin in @('calico.exe', 'calico-ipam.exe')) {
    if (Install-WinfleetFile -Source (Join-Path $calicoDirectory "cni\$plugin") -Destination (Join-Path $cniBin $plugin)) {
        $pluginChanged = $true
    }
}
# Calico's plugin decodes windows_loopback_DSR as a boolean (a string fails
# every pod sandbox), and sets it from what the build supports, as Calico's
# Install-CNIPlugin does: not from kube-proxy's setting.
$dsr = [bool](Resolve-WinfleetDsr -Name 'CALICO_LOOPBACK_DSR' -Value (Get-WinfleetVariable -Name 'CALICO_LOOPBACK_DSR' -Default 'auto'))
$cniConfig = [ordered]@{
    name                       = 'Calico'
    windows_use_single_network = $true
    cniVersion                 = '0.3.1'
    type                       = 'calico'
    mode                       = 'vxlan'
    vxlan_mac_prefix           = '0E-2A'
    vxlan_vni                  = [int]$vni
    policy                     = [ordered]@{ type = 'k8s' }
    log_level                  = 'info'
    windows_loopback_DSR       = $dsr
    capabilities               = [ordered]@{ dns = $true }
    DNS                        = [ordered]@{ Nameservers = @($clusterDns -split ','); Search = @("svc.$clusterDomain") }
    nodename_file              = (Join-Path $calicoDirectory 'nodename')
    datastore_type             = 'kubernetes'
    kubernetes                 = [ordered]@{ kubeconfig = $kubeconfigFile }
    ipam                       = [ordered]@{ type = 'calico-ipam'; subnet = 'usePodCidr' }
    # HNS v2 (containerd) names the route policy SDNROUTE.
    policies                   = @(
        [ordered]@{ Name = 'EndpointPolicy'; Value = [ordered]@{ Type = 'OutBoundNAT'; ExceptionList = @($serviceCidr) } },
        [ordered]@{ Name = 'EndpointPolicy'; Value = [ordered]@{ Type = 'SDNROUTE'; DestinationPrefix = $serviceCidr; NeedEncap = $true } }
    )
}
$configChanged = Set-WinfleetFileContent -Path (Join-Path $cniConf '10-calico.conf') -Content (ConvertTo-Json -InputObject $cniConfig -Depth 6)

# Calico's config.ps1 keeps any value already in the environment, so the
# services get their configuration as environment, never as edited code.
$environment = @{
    WINFLEET_ROOT             = $root
    KUBE_NETWORK              = 'Calico.*'
    CALICO_NETWORKING_BACKEND = 'vxlan'
    CALICO_DATASTORE_TYPE     = 'kubernetes'
    KUBECONFIG                = $kubeconfigFile
    K8S_SERVICE_CIDR          = $serviceCidr
    DNS_NAME_SERVERS          = $clusterDns
    DNS_SEARCH                = "svc.$clusterDomain"
    CNI_BIN_DIR               = $cniBin
    CNI_CONF_DIR              = $cniConf
    CNI_CONF_FILENAME         = '10-calico.conf'
    CNI_IPAM_TYPE             = 'calico-ipam'
    VXLAN_VNI                 = $vni
    VXLAN_MAC_PREFIX          = '0E-2A'
    VXLAN_ADAPTER             = $adapter
    NODENAME                  = $nodeName
    CALICO_K8S_NODE_REF       = $nodeName
    STARTUP_VALID_IP_TIMEOUT  = '90'
    IP                        = $nodeIp
    CALICO_LOG_DIR            = (Join-Path $root 'var\log\calico')
    FELIX_LOGSEVERITYFILE     = 'none'
    FELIX_LOGSEVERITYSYS      = 'none'
}
$powershell = Join-Path $env:SystemRoot 'System32\WindowsPowerShell\v1.0\powershell.exe'
$wrapper = Join-Path $root 'k\winfleet\calico\calico-service.ps1'
$node = Set-WinfleetHostedService -Name 'CalicoNode' -Program $powershell -Arguments ('-NoProfile -NonInteractive -ExecutionPolicy Bypass -File "' + $wrapper + '" -Role node') -WorkingDirectory $calicoDirectory -LogFile (Join-Path $root 'var\log\calico\calico-node.log') -Environment $environment -DisplayName 'Calico Windows Startup' -Description 'winfleet: Calico node startup (HNS networks, node resources)' -StartupType 'Automatic' -DependsOn @('containerd')
$felix = Set-WinfleetHostedService -Name 'CalicoFelix' -Program $powershell -Arguments ('-NoProfile -NonInteractive -ExecutionPolicy Bypass -File "' + $wrapper + '" -Role felix') -WorkingDirectory $calicoDirectory -LogFile (Join-Path $root 'var\log\calico\calico-felix.log') -Environment $environment -DisplayName 'Calico Windows Agent' -Description 'winfleet: Calico Felix (network policy)' -StartupType 'Automatic' -DependsOn @('CalicoNode')

# The kubelet (and kube-proxy with it) stays stopped while Calico initialises,
# so no pod is sandboxed on an adapter about to move onto the vSwitch; this
# step waits (bounded) for the vSwitch and the host's connectivity, so the
# drop happens inside this isolated step and not in the ones after it.
$restart = ($kubeconfigChanged -or $pluginChanged -or $configChanged -or $node.Changed -or $felix.Changed) -and (Get-Service -Name 'CalicoNode').Status -eq 'Running'
$starting = $restart -or (Get-Service -Name 'CalicoNode').Status -ne 'Running' -or -not (Test-WinfleetCalicoReady)
$holdKubelet = $starting -and (Get-Service -Name 'kubelet' -ErrorAction SilentlyContinue).Status -eq 'Running'
if ($holdKubelet) {
    Suspend-WinfleetService -Name 'kubelet'
}
if ($restart) {
    Restart-WinfleetService -Name 'CalicoNode'
}
Resume-WinfleetService -Name 'CalicoNode'
if (-not (Wait-WinfleetNetworkReady -TimeoutSeconds 600)) {
    throw 'CalicoNode stopped while it initialised (see var\log\calico\calico-node.log)'
}
Start-WinfleetService -Name 'CalicoFelix'
if ($holdKubelet) {
    Resume-WinfleetService -Name 'kubelet'
}
# On a joined node, the kubelet and kube-proxy run once Calico is ready: an
# upgrade that suspended Calico deferred their start until now.
if (Test-Path -LiteralPath (Join-Path $root 'etc\kubernetes\kubelet.conf')) {
    foreach ($name in @('kubelet', 'kube-proxy')) {
        if ($null -ne (Get-Service -Name $name -ErrorAction SilentlyContinue)) {
            Start-WinfleetService -Name $name
        }
    }
}
exit 0
