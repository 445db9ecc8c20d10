# calico uninstall: the node drops the label that holds the operator's
# calico-node-windows DaemonSet to it, waits (bounded) for the DaemonSet's pod
# to go, then removes what Calico's containers left on the host: the CNI
# plugin and configuration, the HNS networks (which drops the host's
# connectivity for a moment: this component runs isolated) and Calico's
# registry state.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$nodeName = (Assert-WinfleetVariable -Name 'WINFLEET_NODE_NAME' -Pattern '^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$' -Expected 'a DNS-1123 host name').ToLowerInvariant()
$kubectl = Join-Path $root 'k\kubectl.exe'
$kubeconfig = Join-Path $root 'etc\kubernetes\kubelet.conf'

if ((Test-Path -LiteralPath $kubectl) -and (Test-Path -LiteralPath $kubeconfig)) {
    $null = Invoke-WinfleetNative -FilePath $kubectl -ArgumentList @("--kubeconfig=$kubeconfig", 'label', 'node', $nodeName, 'winfleet.io/calico-windows-')
    try {
        Wait-WinfleetCondition -Description "the calico-node-windows pod to leave $nodeName" -TimeoutSeconds 300 -IntervalSeconds 5 -Condition {
            $pods = @(Invoke-WinfleetNative -FilePath $kubectl -ArgumentList @("--kubeconfig=$kubeconfig", 'get', 'pods', '-n', 'calico-system', '-l', 'k8s-app=calico-node-windows', "--field-selector=spec.nodeName=$nodeName", '-o', 'name') -StdoutOnly | Where-Object { $_ -ne '' })
            $pods.Count -eq 0
        }
    }
    catch {
        Write-WinfleetLog "going on without the pod gone: $($_.Exception.Message)"
    }
}
Import-WinfleetHns
$networks = @(Get-HnsNetwork | Where-Object { $_.Name -eq 'Calico' -or $_.Name -eq 'External' })
if ($networks.Count -gt 0) {
    Write-WinfleetLog "removing the HNS networks $(($networks | ForEach-Object { $_.Name }) -join ', ')"
    $networks | Remove-HnsNetwork
}
$null = Remove-WinfleetItem -Path 'HKLM:\SOFTWARE\Tigera\Calico'
exit 0
