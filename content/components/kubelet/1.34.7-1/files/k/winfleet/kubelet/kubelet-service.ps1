# What the kubelet service runs: waits for what the kubelet needs, then runs
# it in the foreground with the arguments the install wrote. containerd's pipe
# (the runtime), this boot's HNS reset and the CNI initialised since it (a pod
# sandboxed earlier gets an adapter about to go, as Calico's own
# kubelet-service.ps1 waits), and the node's credentials (kubelet.conf, or the
# bootstrap kubeconfig join-kubeadm writes): each waited for without end,
# saying so every minute, since nothing the kubelet does can help them come.
# NSSM restarts the wrapper when the kubelet exits.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$credentials = @((Join-Path $root 'etc\kubernetes\kubelet.conf'), (Join-Path $root 'etc\kubernetes\bootstrap-kubelet.conf'))
Wait-WinfleetServiceNeeds -Needs @('containerd', 'hns-reset', 'network', 'file') -Paths $credentials

$arguments = @(Get-Content -Raw -LiteralPath $env:KUBELET_ARGUMENTS_FILE | ConvertFrom-Json)
$kubelet = Join-Path $root 'k\kubelet.exe'
Write-WinfleetLog "starting the kubelet $($arguments -join ' ')"
# In the foreground, its output streaming straight into the service's log; its
# exit code is the service's.
& $kubelet @arguments
exit $LASTEXITCODE
