# What the kube-proxy service runs: waits for the CNI's HNS network (which the
# CNI creates with the node's first pod: as Calico's own wrapper, it waits as
# long as that takes, saying so every minute, rather than restart-loop),
# finds the overlay's source VIP when the network is an overlay, clears HNS
# policy lists a previous kube-proxy left behind (it does not resync them),
# then runs kube-proxy in the foreground. NSSM restarts it when it exits.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$network = $env:KUBE_PROXY_NETWORK_NAME
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

$arguments = @(
    "--hostname-override=$env:KUBE_PROXY_NODE_NAME",
    "--kubeconfig=$env:KUBE_PROXY_KUBECONFIG_PATH",
    '--proxy-mode=kernelspace',
    "--network-name=$network",
    "--v=$env:KUBE_PROXY_LOG_VERBOSITY"
)
if ($hnsNetwork.Type -eq 'Overlay') {
    # On an overlay, kube-proxy SNATs to the host endpoint the CNI created on
    # the network (Calico names it <network>_ep).
    $endpointName = $network + '_ep'
    Wait-WinfleetCondition -Description "the HNS endpoint $endpointName" -TimeoutSeconds 600 -IntervalSeconds 5 -Condition {
        $null -ne (Get-HnsEndpoint | Where-Object { $_.Name -eq $endpointName })
    }
    $sourceVip = (Get-HnsEndpoint | Where-Object { $_.Name -eq $endpointName } | Select-Object -First 1).IPAddress
    $arguments += "--source-vip=$sourceVip"
}
if ([string]$env:KUBE_CLUSTER_CIDR -ne '') {
    $arguments += "--cluster-cidr=$env:KUBE_CLUSTER_CIDR"
}
if ([string]$env:KUBE_PROXY_ENABLE_DSR -eq 'true') {
    $arguments += '--enable-dsr=true'
}
if ([string]$env:KUBE_PROXY_FEATURE_GATES -ne '') {
    $arguments += "--feature-gates=$env:KUBE_PROXY_FEATURE_GATES"
}

$stale = @(Get-HnsPolicyList)
if ($stale.Count -gt 0) {
    Write-WinfleetLog "removing $($stale.Count) HNS policy lists a previous kube-proxy left"
    $stale | Remove-HnsPolicyList
}

$kubeProxy = Join-Path $root 'k\kube-proxy.exe'
Write-WinfleetLog "starting kube-proxy $($arguments -join ' ')"
# In the foreground, its output streaming straight into the service's log;
# its exit code is the service's.
& $kubeProxy @arguments
exit $LASTEXITCODE
