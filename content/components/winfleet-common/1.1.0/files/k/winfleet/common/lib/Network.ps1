# Node networking: the HNS cmdlets, the CNI's readiness, and the lock that
# keeps the boot-time HNS reset and the agent's steps from starting and
# stopping the same services at the same time.

# The services that must not start before the CNI has initialised: pods they
# sandbox earlier get a broken adapter (Calico's kubelet-service.ps1 waits the
# same way), and kube-proxy programs load balancers on a network about to go.
$script:NetworkServices = @('kubelet', 'winfleet-kube-proxy')
$script:NodeLockName = 'Global\winfleet-node-services'
$script:CalicoRegistryKey = 'HKLM:\SOFTWARE\Tigera\Calico'

function Import-WinfleetHns {
    # Makes the HNS cmdlets (Get-HnsNetwork, Get-HnsEndpoint, Get-HnsPolicyList
    # and their Remove- pairs) available to the caller, from the inbox
    # HostNetworkingService module. Never from Calico's hns.psm1: a node-side
    # Calico kept it in C:\CalicoWindows, under C:\'s inherited ACL, where any
    # user may create that directory and a module SYSTEM would load. Throws
    # when the module is not there, rather than skip HNS work.
    [CmdletBinding()]
    param()
    if ($null -ne (Get-Command -Name 'Get-HnsPolicyList' -ErrorAction SilentlyContinue)) {
        return
    }
    if ($null -ne (Get-Module -ListAvailable -Name 'HostNetworkingService')) {
        Import-Module -Name 'HostNetworkingService' -Global -DisableNameChecking
    }
    if ($null -eq (Get-Command -Name 'Get-HnsNetwork' -ErrorAction SilentlyContinue)) {
        throw 'the HNS cmdlets are not available: the HostNetworkingService module (Windows Server 2019 and later, with the Containers feature) is not on this host'
    }
}

function Get-WinfleetBootTime {
    # When the host last booted, as Calico's node service reads it.
    [CmdletBinding()]
    param()
    $bootTime = (Get-CimInstance -ClassName Win32_OperatingSystem).LastBootUpTime
    if ($null -eq $bootTime) {
        throw 'Win32_OperatingSystem reports no LastBootUpTime'
    }
    return $bootTime
}

function Test-WinfleetCalicoReady {
    # Whether Calico's node service has finished initialising since this
    # boot: it recorded this boot time, and its External network has the host's
    # management IP (the vSwitch is up, so the host's own connectivity is back).
    [CmdletBinding()]
    param()
    $bootTime = Get-WinfleetBootTime
    $stored = (Get-ItemProperty -LiteralPath $script:CalicoRegistryKey -ErrorAction SilentlyContinue).LastBootTime
    if ($null -eq $stored) {
        return $false
    }
    # Calico stores the boot time as text in the culture it ran in: read it back
    # in that culture or the invariant one, to the second.
    $same = $false
    foreach ($culture in @([System.Globalization.CultureInfo]::CurrentCulture, [System.Globalization.CultureInfo]::InvariantCulture)) {
        $parsed = [datetime]::MinValue
        if ([datetime]::TryParse([string]$stored, $culture, [System.Globalization.DateTimeStyles]::None, [ref]$parsed)) {
            if ([math]::Abs(($parsed - $bootTime).TotalSeconds) -lt 2) {
                $same = $true
            }
        }
    }
    if (-not $same) {
        return $false
    }
    Import-WinfleetHns
    $external = @(Get-HnsNetwork | Where-Object { $_.Name -eq 'External' }) | Select-Object -First 1
    return ($null -ne $external -and -not [string]::IsNullOrEmpty([string]$external.ManagementIP))
}

function Wait-WinfleetNetworkReady {
    # Waits (bounded) until the CNI has initialised since this boot and returns
    # true; true at once where no CNI service is installed (before Calico's own
    # step, when the kubelet must run to join). False when the CNI service is
    # installed but stopped (an upgrade that suspended it): nothing would make
    # it ready now, and whatever starts it (Calico's install, the boot task)
    # starts the services that wait for it.
    [CmdletBinding()]
    param(
        [int]$TimeoutSeconds = 600
    )
    $calicoNode = Get-Service -Name 'CalicoNode' -ErrorAction SilentlyContinue
    if ($null -eq $calicoNode) {
        return $true
    }
    if ($calicoNode.Status -ne 'Running' -and $calicoNode.Status -ne 'StartPending') {
        return $false
    }
    Wait-WinfleetCondition -Description 'Calico to initialise (boot time recorded, External network with its management IP)' -TimeoutSeconds $TimeoutSeconds -IntervalSeconds 5 -Condition {
        (Test-WinfleetCalicoReady) -eq $true
    }
    return $true
}

function Reset-WinfleetCalicoBootMarker {
    # Makes Calico's next start its first since boot, so it cleans up and
    # creates its External network again: after HNS was reset under it.
    [CmdletBinding()]
    param()
    return (Remove-WinfleetRegistryValue -Path $script:CalicoRegistryKey -Name 'LastBootTime')
}

function Test-WinfleetNetworkService {
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    return ($script:NetworkServices -contains $Name)
}

function Enter-WinfleetNodeLock {
    # Takes the machine-wide lock on the node's services (a named mutex, which
    # Windows releases when its holder dies), waiting at most TimeoutSeconds.
    # Re-entrant within one script. Returns what Exit-WinfleetNodeLock takes.
    [CmdletBinding()]
    param(
        [int]$TimeoutSeconds = 900
    )
    $mutex = New-Object System.Threading.Mutex -ArgumentList $false, $script:NodeLockName
    try {
        if (-not $mutex.WaitOne([TimeSpan]::FromSeconds($TimeoutSeconds))) {
            throw "timed out after $TimeoutSeconds s waiting for the node-services lock (the boot-time HNS reset or another step holds it)"
        }
    }
    catch [System.Threading.AbandonedMutexException] {
        # Its holder died: the lock is ours now.
        Write-WinfleetLog 'took over the node-services lock its previous holder abandoned'
    }
    return $mutex
}

function Exit-WinfleetNodeLock {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][System.Threading.Mutex]$Lock
    )
    $Lock.ReleaseMutex()
    $Lock.Dispose()
}

function Stop-WinfleetProcessTree {
    # Ends process ProcessId and every process it started, children first: a
    # service hosted by NSSM runs the real program (and, for a PowerShell
    # wrapper, its child) under nssm.exe, which alone would leave them running.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][int]$ProcessId
    )
    $all = @(Get-CimInstance -ClassName Win32_Process)
    $tree = New-Object System.Collections.Generic.List[int]
    $tree.Add($ProcessId)
    for ($i = 0; $i -lt $tree.Count; $i++) {
        foreach ($child in $all) {
            if ($child.ParentProcessId -eq $tree[$i] -and -not $tree.Contains([int]$child.ProcessId) -and $child.ProcessId -ne $child.ParentProcessId) {
                $tree.Add([int]$child.ProcessId)
            }
        }
    }
    $tree.Reverse()
    foreach ($id in $tree) {
        Stop-Process -Id $id -Force -ErrorAction SilentlyContinue
    }
    return $tree.Count
}
