# What the winfleet-node-reset task runs at every startup, as AKS's
# windowsnodereset.ps1 does: HNS networks, endpoints and load balancers do not
# survive a restart in a usable state, so the node services stop, HNS is
# reset (all but the built-in nat network), the reset is recorded for this
# boot and the services start again in dependency order. The services start
# automatically at boot themselves; each one's wrapper waits for this reset
# (and the kubelet's and kube-proxy's for the CNI), so the order holds however
# the SCM starts them. A service that fails to start does not stop the others;
# it is tried again, and while one still fails the task exits 1, which its
# restart policy answers with another run. It holds the node-services lock
# throughout, so the agent's own steps after a reboot wait for it. Runs
# outside the agent, so it finds the content root from its own location
# (root\k\winfleet\node-reset).
$ErrorActionPreference = 'Stop'
$root = (Resolve-Path -LiteralPath (Join-Path $PSScriptRoot '..\..\..')).Path
$env:WINFLEET_ROOT = $root
Import-Module (Join-Path $root 'k\winfleet\common\WinfleetCommon.psm1') -Force
$log = Join-Path $root 'var\log\node-reset\node-reset.log'
New-Item -ItemType Directory -Force -Path (Split-Path -Parent $log) | Out-Null
Start-Transcript -LiteralPath $log -Append | Out-Null
$failed = @()
$lock = Enter-WinfleetNodeLock
try {
    # Dependents first when stopping; the reverse when starting.
    $order = @('winfleet-kube-proxy', 'kubelet', 'csi-proxy')
    $present = @($order | Where-Object { $null -ne (Get-Service -Name $_ -ErrorAction SilentlyContinue) })
    foreach ($name in $present) {
        Stop-WinfleetService -Name $name
    }
    Import-WinfleetHns
    Write-WinfleetLog 'resetting HNS: policy lists, endpoints, networks (nat stays)'
    Get-HnsPolicyList | Remove-HnsPolicyList
    Get-HnsEndpoint | Remove-HnsEndpoint
    Get-HnsNetwork | Where-Object { $_.Type -ne 'nat' -and $_.Name -ne 'nat' } | Remove-HnsNetwork
    # Calico creates its External network only on its first start since boot:
    # make this start that one, whatever ran before the reset.
    $null = Reset-WinfleetCalicoBootMarker
    Set-WinfleetHnsResetDone
    [array]::Reverse($present)
    # Before the node has joined, join-kubeadm starts the kubelet (and kube-proxy's install kube-proxy).
    $joined = Test-Path -LiteralPath (Join-Path $root 'etc\kubernetes\kubelet.conf')
    $start = @($present | Where-Object { $joined -or ($_ -ne 'kubelet' -and $_ -ne 'winfleet-kube-proxy') })
    # Start-WinfleetService holds the kubelet and kube-proxy until the CNI is ready.
    $failed = @(Start-WinfleetNodeServices -Names $start -Attempts 3 -DelaySeconds 30 -TimeoutSeconds 120)
    if ($failed.Count -eq 0) {
        Write-WinfleetLog 'node services restarted after the HNS reset'
    }
    else {
        Write-WinfleetLog "services still not running after the HNS reset: $($failed -join ', ') (the task runs again)"
    }
}
finally {
    Exit-WinfleetNodeLock -Lock $lock
    Stop-Transcript | Out-Null
}
if ($failed.Count -gt 0) {
    exit 1
}
exit 0
