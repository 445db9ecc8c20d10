# Joining a cluster the kubeadm way: the cluster CA is discovered from the
# public cluster-info ConfigMap and trusted only when its public key matches
# the pinned hash (what `kubeadm join --discovery-token-ca-cert-hash` checks),
# and kubeconfigs are built as data, never as code.

function Read-WinfleetDerHeader {
    # Tag, header size and content length of the DER element at Offset.
    param(
        [Parameter(Mandatory = $true)][byte[]]$Bytes,
        [Parameter(Mandatory = $true)][int]$Offset
    )
    $first = [int]$Bytes[$Offset + 1]
    $length = $first
    $header = 2
    if ($first -ge 0x80) {
        $count = $first -band 0x7f
        $length = 0
        for ($i = 0; $i -lt $count; $i++) {
            $length = ($length * 256) + [int]$Bytes[$Offset + 2 + $i]
        }
        $header = 2 + $count
    }
    return [pscustomobject]@{ Tag = [int]$Bytes[$Offset]; Header = $header; End = $Offset + $header + $length }
}

function Get-WinfleetSpkiSha256 {
    # Hex SHA-256 of a certificate's DER-encoded SubjectPublicKeyInfo, the
    # value kubeadm's CA pins are made of. Certificate ::= SEQUENCE { tbs, ... };
    # tbs ::= SEQUENCE { [0] version OPTIONAL, serial, signature, issuer,
    # validity, subject, subjectPublicKeyInfo, ... }.
    param(
        [Parameter(Mandatory = $true)][byte[]]$Der
    )
    $certificate = Read-WinfleetDerHeader -Bytes $Der -Offset 0
    $tbs = Read-WinfleetDerHeader -Bytes $Der -Offset $certificate.Header
    $offset = $certificate.Header + $tbs.Header
    if ((Read-WinfleetDerHeader -Bytes $Der -Offset $offset).Tag -eq 0xA0) {
        $offset = (Read-WinfleetDerHeader -Bytes $Der -Offset $offset).End
    }
    for ($i = 0; $i -lt 5; $i++) {
        $offset = (Read-WinfleetDerHeader -Bytes $Der -Offset $offset).End
    }
    $spki = Read-WinfleetDerHeader -Bytes $Der -Offset $offset
    if ($spki.Tag -ne 0x30) {
        throw 'not an X.509 certificate: no SubjectPublicKeyInfo where one belongs'
    }
    $bytes = New-Object byte[] ($spki.End - $offset)
    [Array]::Copy($Der, $offset, $bytes, 0, $bytes.Length)
    $sha = [System.Security.Cryptography.SHA256]::Create()
    try {
        $digest = $sha.ComputeHash($bytes)
    }
    finally {
        $sha.Dispose()
    }
    return (-join ($digest | ForEach-Object { $_.ToString('x2') }))
}

function Get-WinfleetClusterCA {
    # Fetches the cluster's CA bundle from the public cluster-info ConfigMap
    # and returns it (PEM) only if one of its certificates' public key hashes
    # to CaCertHash ('sha256:<hex>'). The fetch itself cannot verify the
    # server (the CA is what it fetches); the pin is what makes it safe.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$ApiServer,
        [Parameter(Mandatory = $true)][string]$CaCertHash,
        [int]$Attempts = 10
    )
    $pin = $CaCertHash.ToLowerInvariant()
    if ($pin -notmatch '^sha256:[0-9a-f]{64}$') {
        throw 'the CA pin is not sha256:<64 hex digits>'
    }
    $uri = $ApiServer.TrimEnd('/') + '/api/v1/namespaces/kube-public/configmaps/cluster-info'
    $temporary = Join-Path ([System.IO.Path]::GetTempPath()) ('winfleet-cluster-info-' + [guid]::NewGuid().ToString('N') + '.json')
    $document = $null
    for ($attempt = 1; $attempt -le $Attempts; $attempt++) {
        try {
            Invoke-WinfleetHttpGet -Uri $uri -OutFile $temporary -TimeoutSeconds 30 -SkipCertificateCheck
            $document = Get-Content -Raw -LiteralPath $temporary | ConvertFrom-Json
            break
        }
        catch {
            if ($attempt -eq $Attempts) {
                throw "could not read cluster-info from $ApiServer after $Attempts attempts: $($_.Exception.Message)"
            }
            Write-WinfleetLog "cluster-info is not readable yet ($($_.Exception.Message)); retrying"
            Start-Sleep -Seconds 10
        }
        finally {
            Remove-Item -LiteralPath $temporary -Force -ErrorAction SilentlyContinue
        }
    }
    $kubeconfig = [string]$document.data.kubeconfig
    if ($kubeconfig -notmatch 'certificate-authority-data:\s*([A-Za-z0-9+/=]+)') {
        throw "cluster-info from $ApiServer carries no certificate-authority-data"
    }
    $pem = [System.Text.Encoding]::ASCII.GetString([Convert]::FromBase64String($Matches[1]))
    $blocks = [regex]::Matches($pem, '-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----')
    foreach ($block in $blocks) {
        $der = [Convert]::FromBase64String(($block.Groups[1].Value -replace '\s', ''))
        if (('sha256:' + (Get-WinfleetSpkiSha256 -Der $der)) -eq $pin) {
            Write-WinfleetLog "the cluster CA from $ApiServer matches its pin"
            return $pem
        }
    }
    throw "the CA that $ApiServer serves does not match KUBE_CA_CERT_HASH: refusing to trust it"
}

function ConvertTo-WinfleetKubeconfig {
    # A kubeconfig (JSON, which Kubernetes reads as YAML) for one server and
    # one user, authenticated by Token or by client certificate files.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Server,
        [Parameter(Mandatory = $true)][string]$CertificateAuthorityPath,
        [Parameter(Mandatory = $true)][string]$UserName,
        [string]$Token = '',
        [string]$ClientCertificatePath = '',
        [string]$ClientKeyPath = ''
    )
    $user = [ordered]@{}
    if ($Token -ne '') {
        $user.token = $Token
    }
    else {
        $user['client-certificate'] = $ClientCertificatePath
        $user['client-key'] = $ClientKeyPath
    }
    $context = "$UserName@kubernetes"
    $config = [ordered]@{
        apiVersion        = 'v1'
        kind              = 'Config'
        clusters          = @([ordered]@{ name = 'kubernetes'; cluster = [ordered]@{ server = $Server; 'certificate-authority' = $CertificateAuthorityPath } })
        users             = @([ordered]@{ name = $UserName; user = $user })
        contexts          = @([ordered]@{ name = $context; context = [ordered]@{ cluster = 'kubernetes'; user = $UserName } })
        'current-context' = $context
    }
    return (ConvertTo-Json -InputObject $config -Depth 8)
}
