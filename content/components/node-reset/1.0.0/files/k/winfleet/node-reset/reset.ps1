# What the winfleet-node-reset task runs at every startup, as AKS's
# windowsnodereset.ps1 does: HNS networks, endpoints and load balancers do not
# survive a restart in a usable state, so the node services stop, HNS is
# reset (all but the built-in nat network) and the services start again in
# dependency order: the CNI first, and the kubelet and kube-proxy (which start
# on demand, never by themselves at boot) only once the CNI has initialised
# since this boot. It holds the node-services lock throughout, so the agent's
# own steps after a reboot wait for it rather than start and stop the same
# services at the same time. Runs outside the agent, so it finds the content
# root from its own location (root\k\winfleet\node-reset).
$ErrorActionPreference = 'Stop'
$root = (Resolve-Path -LiteralPath (Join-Path $PSScriptRoot '..\..\..')).Path
$env:WINFLEET_ROOT = $root
Import-Module (Join-Path $root 'k\winfleet\common\WinfleetCommon.psm1') -Force
$log = Join-Path $root 'var\log\node-reset\node-reset.log'
New-Item -ItemType Directory -Force -Path (Split-Path -Parent $log) | Out-Null
Start-Transcript -LiteralPath $log -Append | Out-Null
$lock = Enter-WinfleetNodeLock
try {
    # Dependents first when stopping; the reverse when starting.
    $order = @('kube-proxy', 'kubelet', 'CalicoFelix', 'CalicoNode', 'csi-proxy')
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
    [array]::Reverse($present)
    $joined = Test-Path -LiteralPath (Join-Path $root 'etc\kubernetes\kubelet.conf')
    foreach ($name in $present) {
        if ((Get-Service -Name $name).StartType -eq 'Disabled') {
            continue
        }
        # Before the node has joined, join-kubeadm starts the kubelet (and kube-proxy's install kube-proxy).
        if (-not $joined -and ($name -eq 'kubelet' -or $name -eq 'kube-proxy')) {
            continue
        }
        # Start-WinfleetService holds the kubelet and kube-proxy until the CNI is ready.
        Start-WinfleetService -Name $name -TimeoutSeconds 120
    }
    Write-WinfleetLog 'node services restarted after the HNS reset'
}
finally {
    Exit-WinfleetNodeLock -Lock $lock
    Stop-Transcript | Out-Null
}
exit 0
