# What the kube-proxy service runs: waits for this boot's HNS reset, the CNI
# initialised since it and kube-proxy's kubeconfig, then for the CNI's HNS
# network (which the CNI creates with the node's first pod: as Calico's own
# wrapper, it waits as long as that takes, saying so every minute, rather than
# restart-loop); finds the overlay's source VIP when the network is an
# overlay; clears HNS policy lists a previous kube-proxy left behind (it does
# not resync them); writes kube-proxy's KubeProxyConfiguration (the source VIP
# is only known now) and runs kube-proxy with it in the foreground. NSSM
# restarts it when it exits.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$network = $env:KUBE_PROXY_NETWORK_NAME
$nodeName = $env:KUBE_PROXY_NODE_NAME
$kubeconfig = $env:KUBE_PROXY_KUBECONFIG_PATH
$clusterCidr = [string]$env:KUBE_CLUSTER_CIDR
$enableDsr = [string]$env:KUBE_PROXY_ENABLE_DSR -eq 'true'
Wait-WinfleetServiceNeeds -Needs @('hns-reset', 'network', 'file') -Paths @($kubeconfig)
Import-WinfleetHns

$waited = 0
while ($null -eq (Get-HnsNetwork | Where-Object { $_.Name -eq $network })) {
    if ($waited % 60 -eq 0) {
        Write-WinfleetLog "waiting for the HNS network $network (the CNI creates it with the node's first pod)"
    }
    Start-Sleep -Seconds 5
    $waited += 5
}
$hnsNetwork = Get-HnsNetwork | Where-Object { $_.Name -eq $network } | Select-Object -First 1

$sourceVip = ''
if ($hnsNetwork.Type -eq 'Overlay') {
    # On an overlay, kube-proxy SNATs to the host endpoint the CNI created on
    # the network (Calico names it <network>_ep).
    $endpointName = $network + '_ep'
    Wait-WinfleetCondition -Description "the HNS endpoint $endpointName" -TimeoutSeconds 600 -IntervalSeconds 5 -Condition {
        $null -ne (Get-HnsEndpoint | Where-Object { $_.Name -eq $endpointName })
    }
    $sourceVip = [string](Get-HnsEndpoint | Where-Object { $_.Name -eq $endpointName } | Select-Object -First 1).IPAddress
}
$featureGates = [ordered]@{}
foreach ($pair in @(([string]$env:KUBE_PROXY_FEATURE_GATES -split ',') | Where-Object { $_ -ne '' })) {
    $gate, $value = $pair -split '=', 2
    $featureGates[$gate] = $value -eq 'true'
}

# kube-proxy's configuration, as data (ConvertTo-Json writes it; kube-proxy
# reads JSON as YAML).
$configuration = [ordered]@{
    kind             = 'KubeProxyConfiguration'
    apiVersion       = 'kubeproxy.config.k8s.io/v1alpha1'
    mode             = 'kernelspace'
    hostnameOverride = $nodeName
    clientConnection = [ordered]@{ kubeconfig = $kubeconfig }
    clusterCIDR      = $clusterCidr
    featureGates     = $featureGates
    winkernel        = [ordered]@{ networkName = $network; sourceVip = $sourceVip; enableDSR = $enableDsr }
}
$configFile = Join-Path $root 'var\lib\kube-proxy\config.json'
$null = Set-WinfleetFileContent -Path $configFile -Content (ConvertTo-Json -InputObject $configuration -Depth 6)

$stale = @(Get-HnsPolicyList)
if ($stale.Count -gt 0) {
    Write-WinfleetLog "removing $($stale.Count) HNS policy lists a previous kube-proxy left"
    $stale | Remove-HnsPolicyList
}

$kubeProxy = Join-Path $root 'k\kube-proxy.exe'
$arguments = @("--config=$configFile", "--v=$env:KUBE_PROXY_LOG_VERBOSITY")
Write-WinfleetLog "starting kube-proxy $($arguments -join ' ') (network $network, source VIP '$sourceVip', DSR $enableDsr)"
# In the foreground, its output streaming straight into the service's log;
# its exit code is the service's.
& $kubeProxy @arguments
exit $LASTEXITCODE
