# join-kubeadm uninstall: the node leaves: kube-proxy and the kubelet stop,
# then every pod's containers and sandboxes are deleted through containerd
# (still running: its uninstall comes later), so Calico's uninstall removes
# HNS networks no pod endpoint holds any more and no runhcs shim outlives
# containerd. The agent removes the node's credentials and the cluster CA
# (this component's files). The Node object stays in the cluster until
# someone deletes it (a node cannot delete itself).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot

Stop-WinfleetService -Name 'winfleet-kube-proxy'
Stop-WinfleetService -Name 'kubelet'
$ctr = Join-Path $root 'Program Files\containerd\ctr.exe'
$containerd = Get-Service -Name 'containerd' -ErrorAction SilentlyContinue
if ((Test-Path -LiteralPath $ctr) -and $null -ne $containerd -and $containerd.Status -eq 'Running') {
    # The CRI plugin's namespace: every pod's sandbox and containers.
    $tasks = @(Invoke-WinfleetNative -FilePath $ctr -ArgumentList @('--namespace', 'k8s.io', 'tasks', 'list', '--quiet') -StdoutOnly | Where-Object { $_ -match '^[0-9a-f]{64}$' })
    foreach ($task in $tasks) {
        $null = Invoke-WinfleetNative -FilePath $ctr -ArgumentList @('--namespace', 'k8s.io', 'tasks', 'delete', '--force', $task) -SuccessExitCodes @(0, 1)
    }
    $containers = @(Invoke-WinfleetNative -FilePath $ctr -ArgumentList @('--namespace', 'k8s.io', 'containers', 'list', '--quiet') -StdoutOnly | Where-Object { $_ -match '^[0-9a-f]{64}$' })
    foreach ($container in $containers) {
        $null = Invoke-WinfleetNative -FilePath $ctr -ArgumentList @('--namespace', 'k8s.io', 'containers', 'delete', $container)
    }
    Write-WinfleetLog "deleted $($tasks.Count) tasks and $($containers.Count) containers of the node's pods"
}
exit 0
