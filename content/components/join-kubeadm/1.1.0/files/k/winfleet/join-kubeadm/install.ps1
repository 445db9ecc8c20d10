# join-kubeadm install (and post_upgrade): joins the node the way kubeadm
# does, by TLS bootstrap. The cluster CA comes from the public cluster-info
# ConfigMap and is trusted only when its key matches KUBE_CA_CERT_HASH; the
# bootstrap token goes only into the bootstrap kubeconfig (readable by SYSTEM
# and Administrators), never into output; the kubelet trades it for its own
# client certificate, after which the bootstrap kubeconfig is deleted (and the
# agent removes the token from its config). The token is asked for only while
# the node has not joined: a joined node upgrades and leaves without it.
$ErrorActionPreference = 'Stop'
Import-Module (Join-Path $env:WINFLEET_ROOT 'k\winfleet\common\WinfleetCommon.psm1') -Force
$root = Get-WinfleetRoot
$kubeconfig = Join-Path $root 'etc\kubernetes\kubelet.conf'
$bootstrapKubeconfig = Join-Path $root 'etc\kubernetes\bootstrap-kubelet.conf'
$caFile = Join-Path $root 'etc\kubernetes\pki\ca.crt'

if (Test-Path -LiteralPath $kubeconfig) {
    Write-WinfleetLog 'the node has joined already (kubelet.conf exists)'
    $null = Remove-WinfleetItem -Path $bootstrapKubeconfig
    Resume-WinfleetService -Name 'kubelet'
    exit 0
}

$apiServer = Assert-WinfleetVariable -Name 'KUBE_API_SERVER' -Pattern '^https://[A-Za-z0-9.:\[\]-]+(:[0-9]+)?/?$' -Expected 'the https:// URL of the API server'
$caCertHash = Assert-WinfleetVariable -Name 'KUBE_CA_CERT_HASH' -Pattern '^sha256:[0-9a-fA-F]{64}$' -Expected 'sha256:<64 hex digits>'
$token = Assert-WinfleetVariable -Name 'KUBE_BOOTSTRAP_TOKEN' -Pattern '^[a-z0-9]{6}\.[a-z0-9]{16}$' -Expected 'a bootstrap token (<6 characters>.<16 characters>)'

$ca = Get-WinfleetClusterCA -ApiServer $apiServer -CaCertHash $caCertHash
$null = Set-WinfleetFileContent -Path $caFile -Content $ca
$bootstrap = ConvertTo-WinfleetKubeconfig -Server $apiServer.TrimEnd('/') -CertificateAuthorityPath $caFile -UserName 'tls-bootstrap-token-user' -Token $token
$null = Set-WinfleetSecretFile -Path $bootstrapKubeconfig -Content $bootstrap

Write-WinfleetLog "starting the kubelet to bootstrap its client certificate from $apiServer"
Restart-WinfleetService -Name 'kubelet'
$log = Join-Path $root 'var\log\kubelet\kubelet.log'
try {
    Wait-WinfleetCondition -Description 'the kubelet to finish TLS bootstrap (kubelet.conf)' -TimeoutSeconds 600 -IntervalSeconds 5 -Condition {
        Test-Path -LiteralPath $kubeconfig
    }
}
catch {
    $tail = ''
    if (Test-Path -LiteralPath $log) {
        $tail = (Get-Content -LiteralPath $log -Tail 20) -join "`n"
    }
    throw "the kubelet did not join: $($_.Exception.Message)`n$tail"
}
# The token was only for the bootstrap; the kubelet now rotates its own certificate.
$null = Remove-WinfleetItem -Path $bootstrapKubeconfig
Write-WinfleetLog 'the node has joined the cluster'
exit 0
