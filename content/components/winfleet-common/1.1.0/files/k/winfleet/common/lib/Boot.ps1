# What a node service waits for before its program starts, each in its own
# wrapper, so the services can start automatically at boot in any order: the
# boot-time HNS reset of this boot, the CNI initialised since it, the node's
# credentials, containerd's pipe. And what the OS build supports (DSR).

# The boot-time HNS reset records the boot it ran in here.
$script:HnsResetMarker = 'k\winfleet\state\hns-reset-boot.txt'

function Get-WinfleetBootStamp {
    # This boot, as text that is the same for every reader in this boot.
    [CmdletBinding()]
    param()
    return (Get-WinfleetBootTime).ToUniversalTime().ToString('yyyy-MM-ddTHH:mm:ssZ', [System.Globalization.CultureInfo]::InvariantCulture)
}

function Set-WinfleetHnsResetDone {
    # Records that the HNS reset of this boot has run.
    [CmdletBinding()]
    param()
    $null = Set-WinfleetFileContent -Path (Get-WinfleetPath -Relative $script:HnsResetMarker) -Content (Get-WinfleetBootStamp)
}

function Test-WinfleetHnsResetDone {
    # Whether a service may use HNS in this boot: the reset has run since the
    # boot, or no reset task is registered (a template without node-reset).
    [CmdletBinding()]
    param()
    $marker = Get-WinfleetPath -Relative $script:HnsResetMarker
    if (Test-Path -LiteralPath $marker -PathType Leaf) {
        if ((Get-Content -Raw -LiteralPath $marker).Trim() -eq (Get-WinfleetBootStamp)) {
            return $true
        }
    }
    $task = Get-ScheduledTask -TaskName 'winfleet-node-reset' -TaskPath '\winfleet\' -ErrorAction SilentlyContinue
    return ($null -eq $task)
}

function Test-WinfleetDsrSupported {
    # Whether this Windows build supports direct server return for Service
    # traffic (kube-proxy's WinDSR, Calico's loopback DSR policy): Windows
    # Server 2019 from build 17763.1432, every later build. The rule Calico's
    # own Get-IsDSRSupported applies.
    [CmdletBinding()]
    param(
        [int]$Build = -1,
        [int]$Revision = -1
    )
    if ($Build -lt 0) {
        $Build = [Environment]::OSVersion.Version.Build
    }
    if ($Revision -lt 0) {
        $Revision = [int](Get-ItemProperty -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion' -Name 'UBR' -ErrorAction SilentlyContinue).UBR
    }
    if ($Build -gt 17763) {
        return $true
    }
    return ($Build -eq 17763 -and $Revision -ge 1432)
}

function Resolve-WinfleetDsr {
    # A DSR setting ('auto', 'true' or 'false') as a boolean: 'auto' follows
    # what the build supports; 'true' on a build without support throws.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$Value
    )
    $supported = Test-WinfleetDsrSupported
    switch ($Value) {
        'auto' { return $supported }
        'false' { return $false }
        'true' {
            if (-not $supported) {
                throw "variable $Name is true but this Windows build does not support DSR (it needs 17763.1432 or later)"
            }
            return $true
        }
        default { throw "variable $Name is not auto, true or false" }
    }
}

function Test-WinfleetServiceNeed {
    # Whether one need of Wait-WinfleetServiceNeeds is met.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Need,
        [string[]]$Paths = @()
    )
    switch ($Need) {
        'hns-reset' { return (Test-WinfleetHnsResetDone) }
        'network' { return ($null -eq (Get-Service -Name 'CalicoNode' -ErrorAction SilentlyContinue) -or (Test-WinfleetCalicoReady)) }
        'containerd' { return (Test-Path -LiteralPath '\\.\pipe\containerd-containerd') }
        'file' { return (@($Paths | Where-Object { Test-Path -LiteralPath $_ }).Count -gt 0) }
    }
    throw "unknown service need $Need"
}

function Wait-WinfleetServiceNeeds {
    # Blocks a service wrapper until what its program needs is there, saying
    # what it waits for every minute: the HNS reset of this boot ('hns-reset'),
    # the CNI initialised since it ('network'), containerd's pipe
    # ('containerd'), and a file ('file', one of Paths). A need that does not
    # come within TimeoutSeconds throws, and the service's restart policy runs
    # the wrapper again; 0 waits without end.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][ValidateSet('hns-reset', 'network', 'containerd', 'file')][string[]]$Needs,
        [string[]]$Paths = @(),
        [int]$TimeoutSeconds = 0,
        [int]$IntervalSeconds = 5
    )
    $descriptions = @{
        'hns-reset'  = 'the HNS reset of this boot'
        'network'    = 'the CNI to initialise since this boot'
        'containerd' = 'the containerd pipe'
        'file'       = "one of $($Paths -join ', ')"
    }
    $started = Get-Date
    foreach ($need in $Needs) {
        $logged = $null
        while (-not (Test-WinfleetServiceNeed -Need $need -Paths $Paths)) {
            $waited = ((Get-Date) - $started).TotalSeconds
            if ($TimeoutSeconds -gt 0 -and $waited -ge $TimeoutSeconds) {
                throw "waited $([int]$waited) s for $($descriptions[$need])"
            }
            if ($null -eq $logged -or ((Get-Date) - $logged).TotalSeconds -ge 60) {
                Write-WinfleetLog "waiting for $($descriptions[$need])"
                $logged = Get-Date
            }
            Start-Sleep -Seconds $IntervalSeconds
        }
    }
}

function Start-WinfleetNodeServices {
    # Starts each of Names that is installed and not disabled, in order; one
    # that fails does not stop the others. Those that failed are tried again,
    # Attempts times in all, DelaySeconds apart. Returns the names still not
    # running (empty when all run).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string[]]$Names,
        [int]$Attempts = 3,
        [int]$DelaySeconds = 30,
        [int]$TimeoutSeconds = 120
    )
    $pending = @($Names | Where-Object {
            $service = Get-Service -Name $_ -ErrorAction SilentlyContinue
            $null -ne $service -and $service.StartType -ne 'Disabled'
        })
    for ($attempt = 1; $attempt -le $Attempts -and $pending.Count -gt 0; $attempt++) {
        if ($attempt -gt 1) {
            Write-WinfleetLog "trying again in $DelaySeconds s (attempt $attempt of $Attempts): $($pending -join ', ')"
            Start-Sleep -Seconds $DelaySeconds
        }
        $failed = @()
        foreach ($name in $pending) {
            try {
                Start-WinfleetService -Name $name -TimeoutSeconds $TimeoutSeconds
                if ((Get-Service -Name $name).Status -ne 'Running') {
                    $failed += $name
                }
            }
            catch {
                Write-WinfleetLog "service $name did not start: $($_.Exception.Message)"
                $failed += $name
            }
        }
        $pending = $failed
    }
    return , $pending
}

# The oldest build of each Windows Server release Calico for Windows supports
# (its requirements: 1809 from 17763.1432, 2022 from 20348.169); a release not
# listed (2025) has no floor here.
$script:OsBuildFloors = @{ 17763 = 1432; 20348 = 169 }

function Test-WinfleetOsBuildFloor {
    # Why this Windows build is too old for the node's CNI, naming the build
    # found and the one needed; empty when it is new enough.
    [CmdletBinding()]
    param(
        [int]$Build = -1,
        [int]$Revision = -1
    )
    if ($Build -lt 0) {
        $Build = [Environment]::OSVersion.Version.Build
    }
    if ($Revision -lt 0) {
        $Revision = [int](Get-ItemProperty -LiteralPath 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion' -Name 'UBR' -ErrorAction SilentlyContinue).UBR
    }
    if ($script:OsBuildFloors.ContainsKey($Build) -and $Revision -lt $script:OsBuildFloors[$Build]) {
        return "this host runs Windows build $Build.$Revision; the node's CNI (Calico) needs $Build.$($script:OsBuildFloors[$Build]) or later: install the Windows updates first"
    }
    return ''
}
