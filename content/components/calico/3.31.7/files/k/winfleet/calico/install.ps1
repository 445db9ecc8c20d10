# calico install (and post_upgrade): the node's side of Calico for Windows
# 3.31, which the cluster's Tigera operator runs as HostProcess containers
# (its calico-node-windows DaemonSet, turned on by the stack's CalicoWindows
# and held to nodes carrying the winfleet.io/calico-windows label). What an
# earlier node-side install left goes first: its services (the pre_upgrade
# stopped and removed them), HNS networks, VXLAN firewall rule, registry state
# and C:\CalicoWindows, so that Calico's first start in its containers creates
# its networks afresh. Then the node labels itself for the DaemonSet, and the
# step waits (bounded) until Calico's containers have written the CNI
# configuration and created the Calico HNS network, so a node whose Calico
# does not come up fails its step and halts the rollout.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$nodeName = (Assert-WinfleetVariable -Name 'WINFLEET_NODE_NAME' -Pattern '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$' -Expected 'a DNS-1123 host name').ToLowerInvariant()
$timeout = [int](Assert-WinfleetVariable -Name 'CALICO_READY_TIMEOUT_SECONDS' -Pattern '^[0-9]{2,5}$' -Expected 'a number of seconds')
$kubectl = Join-Path $root 'k\kubectl.exe'
$kubeconfig = Join-Path $root 'etc\kubernetes\kubelet.conf'
$cniConfig = Join-Path $root 'etc\cni\net.d\10-calico.conflist'
$marker = Join-Path $root 'k\winfleet\calico\hostprocess.txt'
$label = 'winfleet.io/calico-windows=hostprocess'

foreach ($service in @('CalicoConfd', 'CalicoFelix', 'CalicoNode', 'CalicoUpgrade')) {
    $null = Remove-WinfleetService -Name $service
}
if (-not (Test-Path -LiteralPath $marker)) {
    Import-WinfleetHns
    $networks = @(Get-HnsNetwork | Where-Object { $_.Name -eq 'Calico' -or $_.Name -eq 'External' })
    if ($networks.Count -gt 0) {
        Write-WinfleetLog "removing the HNS networks the node-side Calico made: $(($networks | ForEach-Object { $_.Name }) -join ', ')"
        $networks | Remove-HnsNetwork
    }
    $null = Remove-WinfleetFirewallRule -Name 'OverlayTraffic4789UDP'
    $null = Remove-WinfleetItem -Path 'HKLM:\SOFTWARE\Tigera\Calico'
    $null = Remove-WinfleetItem -Path (Join-Path $root 'CalicoWindows')
}

if (-not (Test-Path -LiteralPath $kubectl)) {
    throw "kubectl.exe is not at $kubectl (the kubelet component installs it): cannot label the node for Calico"
}
if (-not (Test-Path -LiteralPath $kubeconfig)) {
    throw "the node has not joined ($kubeconfig is missing): Calico's containers run only on a registered node"
}
# Right after the networks went the host's connectivity may take a moment to
# come back: the label is retried.
$deadline = (Get-Date).AddSeconds(120)
while ($true) {
    try {
        $null = Invoke-WinfleetNative -FilePath $kubectl -ArgumentList @("--kubeconfig=$kubeconfig", 'label', 'node', $nodeName, $label, '--overwrite')
        break
    }
    catch {
        if ((Get-Date) -gt $deadline) {
            throw "could not label the node $nodeName ${label}: $($_.Exception.Message)"
        }
        Start-Sleep -Seconds 5
    }
}
$null = Set-WinfleetFileContent -Path $marker -Content $label
Write-WinfleetLog "labelled the node ${label}: the operator's calico-node-windows DaemonSet runs here now"

Import-WinfleetHns
try {
    Wait-WinfleetCondition -Description "Calico's containers to write $cniConfig and create the Calico HNS network" -TimeoutSeconds $timeout -IntervalSeconds 5 -Condition {
        (Test-Path -LiteralPath $cniConfig) -and ($null -ne (Get-HnsNetwork | Where-Object { $_.Name -eq 'Calico' }))
    }
}
catch {
    throw "Calico did not come up on $nodeName within $timeout s: $($_.Exception.Message). Its containers tell why: kubectl logs -n calico-system -l k8s-app=calico-node-windows -c install-cni (then -c node, -c felix) on the node's pod; the stack must have turned Calico for Windows on (cluster.calicoWindows)"
}
Write-WinfleetLog 'Calico for Windows runs (CNI configuration written, Calico network up)'
exit 0
