# What the winfleet-node-reset task runs at every startup, as AKS's
# k8s-restart-job does: HNS networks, endpoints and load balancers do not
# survive a restart in a usable state, so the node services stop, HNS is
# reset (all but the built-in nat network) and the services start again in
# dependency order. Runs outside the agent, so it finds the content root from
# its own location (root\k\winfleet\node-reset).
$ErrorActionPreference = 'Stop'
$root = (Resolve-Path -LiteralPath (Join-Path $PSScriptRoot '..\..\..')).Path
$env:WINFLEET_ROOT = $root
Import-Module (Join-Path $root 'k\winfleet\common\WinfleetCommon.psm1') -Force
$log = Join-Path $root 'var\log\node-reset\node-reset.log'
New-Item -ItemType Directory -Force -Path (Split-Path -Parent $log) | Out-Null
Start-Transcript -LiteralPath $log -Append | Out-Null
try {
    # Dependents first when stopping, in reverse when starting.
    $order = @('kube-proxy', 'kubelet', 'CalicoFelix', 'CalicoNode', 'csi-proxy')
    $present = @($order | Where-Object { $null -ne (Get-Service -Name $_ -ErrorAction SilentlyContinue) })
    foreach ($name in $present) {
        Stop-WinfleetService -Name $name
    }
    if ($null -ne (Get-Command -Name 'Get-HnsNetwork' -ErrorAction SilentlyContinue)) {
        Write-WinfleetLog 'resetting HNS: policy lists, endpoints, networks (nat stays)'
        Get-HnsPolicyList | Remove-HnsPolicyList
        Get-HnsEndpoint | Remove-HnsEndpoint
        Get-HnsNetwork | Where-Object { $_.Type -ne 'nat' -and $_.Name -ne 'nat' } | Remove-HnsNetwork
    }
    [array]::Reverse($present)
    foreach ($name in $present) {
        if ((Get-Service -Name $name).StartType -ne 'Disabled') {
            Start-WinfleetService -Name $name -TimeoutSeconds 120
        }
    }
    Write-WinfleetLog 'node services restarted after the HNS reset'
}
finally {
    Stop-Transcript | Out-Null
}
exit 0
