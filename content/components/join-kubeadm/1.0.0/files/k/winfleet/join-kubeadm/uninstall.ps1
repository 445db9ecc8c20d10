# join-kubeadm uninstall: the node leaves: kube-proxy and the kubelet stop and
# the agent removes the node's credentials and the cluster CA (this
# component's files). The Node object stays in the cluster until someone
# deletes it (a node cannot delete itself).
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force

Stop-WinfleetService -Name 'kube-proxy'
Stop-WinfleetService -Name 'kubelet'
exit 0
