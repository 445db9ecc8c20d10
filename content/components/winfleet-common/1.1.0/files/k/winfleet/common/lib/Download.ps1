# Verified downloads: nothing fetched is used, unpacked or run before its
# SHA-256 (or SHA-512) matches the value pinned in the component. These are
# the only functions in winfleet content that touch the network.

function Test-WinfleetNoProxy {
    # Whether NO_PROXY exempts Uri's host ('*', exact hosts, domain suffixes).
    param(
        [Parameter(Mandatory = $true)][string]$Uri
    )
    $noProxy = Get-WinfleetVariable -Name 'NO_PROXY'
    if ($noProxy -eq '') {
        return $false
    }
    $hostName = ([Uri]$Uri).Host.ToLowerInvariant()
    foreach ($entry in ($noProxy -split ',')) {
        $item = $entry.Trim().ToLowerInvariant().TrimStart('*')
        if ($item -eq '') {
            if ($entry.Trim() -eq '*') {
                return $true
            }
            continue
        }
        if ($hostName -eq $item.TrimStart('.') -or $hostName.EndsWith('.' + $item.TrimStart('.'))) {
            return $true
        }
    }
    return $false
}

function Invoke-WinfleetHttpGet {
    # Fetches Uri into OutFile. Private: only Save-WinfleetDownload (which
    # checks a pinned file hash) and Get-WinfleetClusterCA (which checks a
    # pinned CA key hash) call it.
    param(
        [Parameter(Mandatory = $true)][string]$Uri,
        [Parameter(Mandatory = $true)][string]$OutFile,
        [int]$TimeoutSeconds = 600,
        [switch]$SkipCertificateCheck
    )
    if (-not $Uri.StartsWith('https://')) {
        throw "refusing to fetch $Uri over anything but https"
    }
    [Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
    $request = @{ Uri = $Uri; OutFile = $OutFile; UseBasicParsing = $true; TimeoutSec = $TimeoutSeconds }
    $proxy = Get-WinfleetVariable -Name 'HTTPS_PROXY'
    if ($proxy -ne '' -and -not (Test-WinfleetNoProxy -Uri $Uri)) {
        $request.Proxy = $proxy
    }
    $savedCallback = $null
    $restoreCallback = $false
    if ($SkipCertificateCheck) {
        if ($PSVersionTable.PSVersion.Major -ge 6) {
            $request.SkipCertificateCheck = $true
        }
        else {
            # Windows PowerShell has no -SkipCertificateCheck; a compiled
            # callback (script blocks cannot run on the TLS thread) is set for
            # this one request and restored after it.
            if (-not ('Winfleet.AcceptAnyCertificate' -as [type])) {
                Add-Type -TypeDefinition @'
namespace Winfleet {
    public static class AcceptAnyCertificate {
        public static bool Accept(object sender, System.Security.Cryptography.X509Certificates.X509Certificate certificate, System.Security.Cryptography.X509Certificates.X509Chain chain, System.Net.Security.SslPolicyErrors errors) {
            return true;
        }
        public static System.Net.Security.RemoteCertificateValidationCallback Callback() {
            return new System.Net.Security.RemoteCertificateValidationCallback(Accept);
        }
    }
}
'@
            }
            $savedCallback = [Net.ServicePointManager]::ServerCertificateValidationCallback
            $restoreCallback = $true
            [Net.ServicePointManager]::ServerCertificateValidationCallback = [Winfleet.AcceptAnyCertificate]::Callback()
        }
    }
    try {
        Invoke-WebRequest @request | Out-Null
    }
    finally {
        if ($restoreCallback) {
            [Net.ServicePointManager]::ServerCertificateValidationCallback = $savedCallback
        }
    }
}

function Test-WinfleetFileHash {
    # Whether Path's digest is Hash (hex, any case).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path,
        [Parameter(Mandatory = $true)][ValidateSet('SHA256', 'SHA512')][string]$Algorithm,
        [Parameter(Mandatory = $true)][string]$Hash
    )
    if (-not (Test-Path -LiteralPath $Path -PathType Leaf)) {
        return $false
    }
    $actual = (Get-FileHash -LiteralPath $Path -Algorithm $Algorithm).Hash
    return ($actual.ToLowerInvariant() -eq $Hash.ToLowerInvariant())
}

function Save-WinfleetDownload {
    # Downloads Url into the content cache and returns the cached path, only
    # once the file's digest equals Hash. A cached copy that still matches is
    # reused; one that does not is fetched again. A mismatch deletes the
    # download and fails: nothing unverified is left where it could be used.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Url,
        [Parameter(Mandatory = $true)][string]$Hash,
        [ValidateSet('SHA256', 'SHA512')][string]$Algorithm = 'SHA256',
        [int]$Attempts = 4
    )
    $expected = $Hash.ToLowerInvariant()
    $length = 64
    if ($Algorithm -eq 'SHA512') {
        $length = 128
    }
    if ($expected -notmatch ('^[0-9a-f]{' + $length + '}$')) {
        throw "the pinned $Algorithm for $Url is not $length hex digits"
    }
    $leaf = [Uri]::UnescapeDataString([System.IO.Path]::GetFileName(([Uri]$Url).AbsolutePath))
    $cacheDirectory = Get-WinfleetPath -Relative ('k\winfleet\cache\' + $expected.Substring(0, 16))
    $target = Join-Path $cacheDirectory $leaf
    if (Test-WinfleetFileHash -Path $target -Algorithm $Algorithm -Hash $expected) {
        Write-WinfleetLog "using the verified copy of $leaf in the cache"
        return $target
    }
    New-Item -ItemType Directory -Force -Path $cacheDirectory | Out-Null
    $partial = "$target.partial"
    for ($attempt = 1; $attempt -le $Attempts; $attempt++) {
        try {
            Write-WinfleetLog "downloading $Url (attempt $attempt of $Attempts)"
            Invoke-WinfleetHttpGet -Uri $Url -OutFile $partial
            break
        }
        catch {
            Remove-Item -LiteralPath $partial -Force -ErrorAction SilentlyContinue
            if ($attempt -eq $Attempts) {
                throw "could not download $Url after $Attempts attempts: $($_.Exception.Message)"
            }
            Start-Sleep -Seconds ([int][Math]::Pow(2, $attempt))
        }
    }
    $actual = (Get-FileHash -LiteralPath $partial -Algorithm $Algorithm).Hash.ToLowerInvariant()
    if ($actual -ne $expected) {
        Remove-Item -LiteralPath $partial -Force
        throw "$Url does not match its pinned $Algorithm (expected $expected, got $actual): deleted, not used"
    }
    Move-Item -LiteralPath $partial -Destination $target -Force
    return $target
}

function Resolve-WinfleetArtifactUrl {
    # Where a download is fetched from: Url itself, or, with the stack's mirror
    # (variable WINFLEET_ARTIFACT_MIRROR, a base URL), <mirror>/<host>/<path>
    # of Url: one mirror holds every upstream side by side. The digest pinned
    # for the download is checked all the same.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Url
    )
    $mirror = Get-WinfleetVariable -Name 'WINFLEET_ARTIFACT_MIRROR'
    if ($mirror -eq '') {
        return $Url
    }
    if (-not $mirror.StartsWith('https://')) {
        throw 'variable WINFLEET_ARTIFACT_MIRROR is not an https:// URL'
    }
    $uri = [Uri]$Url
    return ('{0}/{1}{2}' -f $mirror.TrimEnd('/'), $uri.Authority, $uri.PathAndQuery)
}

function Get-WinfleetArtifact {
    # Reads one entry of a component's artifacts.json (url, version, and a
    # pinned sha256/sha512, or sha256Variable naming the variable the stack
    # sets), downloads it verified, and returns what it is and where.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Manifest,
        [Parameter(Mandatory = $true)][string]$Name
    )
    $document = Get-Content -Raw -LiteralPath $Manifest | ConvertFrom-Json
    $entry = @($document.artifacts | Where-Object { $_.name -eq $Name }) | Select-Object -First 1
    if ($null -eq $entry) {
        throw "$Manifest has no artifact named $Name"
    }
    $algorithm = 'SHA256'
    if ($entry.PSObject.Properties.Name -contains 'sha256') {
        $hash = [string]$entry.sha256
    }
    elseif ($entry.PSObject.Properties.Name -contains 'sha512') {
        $algorithm = 'SHA512'
        $hash = [string]$entry.sha512
    }
    elseif ($entry.PSObject.Properties.Name -contains 'sha256Variable') {
        $hash = Assert-WinfleetVariable -Name ([string]$entry.sha256Variable) -Pattern '^[0-9a-fA-F]{64}$' -Expected "the 64-hex-digit SHA-256 of $($entry.url)"
    }
    else {
        throw "artifact $Name in $Manifest pins no hash"
    }
    $url = Resolve-WinfleetArtifactUrl -Url ([string]$entry.url)
    $path = Save-WinfleetDownload -Url $url -Hash $hash -Algorithm $algorithm
    return [pscustomobject]@{
        Name      = $Name
        Version   = [string]$entry.version
        Url       = $url
        Algorithm = $algorithm
        Hash      = $hash.ToLowerInvariant()
        Path      = $path
    }
}

function Expand-WinfleetArtifact {
    # Unpacks a verified artifact (.zip, .tar.gz, .tgz) into a fresh
    # Destination, or copies a single file there. The digest is checked again
    # first, so a cached file changed since its download is never unpacked.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)]$Artifact,
        [Parameter(Mandatory = $true)][string]$Destination
    )
    if (-not (Test-WinfleetFileHash -Path $Artifact.Path -Algorithm $Artifact.Algorithm -Hash $Artifact.Hash)) {
        throw "refusing to unpack $($Artifact.Path): it no longer matches its pinned $($Artifact.Algorithm)"
    }
    $null = Remove-WinfleetItem -Path $Destination
    New-Item -ItemType Directory -Force -Path $Destination | Out-Null
    $leaf = [System.IO.Path]::GetFileName($Artifact.Path)
    if ($leaf -match '\.(zip|tar\.gz|tgz)$') {
        $tar = Join-Path $env:SystemRoot 'System32\tar.exe'
        $null = Invoke-WinfleetNative -FilePath $tar -ArgumentList @('-x', '-f', $Artifact.Path, '-C', $Destination)
    }
    else {
        Copy-Item -LiteralPath $Artifact.Path -Destination (Join-Path $Destination $leaf) -Force
    }
    return $Destination
}
