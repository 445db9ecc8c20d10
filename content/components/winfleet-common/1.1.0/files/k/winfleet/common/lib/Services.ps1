# Windows services, created or updated in place: binary path, start type,
# dependencies and failure actions converge to what the component declares.
# Programs that are not service-aware (PowerShell wrappers, kubelet's logs)
# run under NSSM, configured through its registry values, not its command
# line, so no value passes through native argument quoting.

function Assert-WinfleetServiceName {
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    # The name goes into a WMI filter; letters, digits, '-', '_' and '.' only.
    if ($Name -notmatch '^[A-Za-z0-9_.-]+$') {
        throw "service name '$Name' may hold letters, digits, '-', '_' and '.' only"
    }
}

function Get-WinfleetServiceRecord {
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    Assert-WinfleetServiceName -Name $Name
    return (Get-CimInstance -ClassName Win32_Service -Filter "Name='$Name'")
}

function Get-WinfleetNssmPath {
    # The NSSM service host winfleet-common installs.
    [CmdletBinding()]
    param()
    $nssm = Get-WinfleetPath -Relative 'k\winfleet\bin\nssm.exe'
    if (-not (Test-Path -LiteralPath $nssm -PathType Leaf)) {
        throw "NSSM is missing at ${nssm}: winfleet-common installs it"
    }
    return $nssm
}

function Set-WinfleetService {
    # Ensures a service-aware program runs as service Name: created when
    # missing, otherwise its binary path, start type and dependencies are
    # changed in place (the service keeps running until the caller restarts
    # it). Failure actions restart it after RestartDelaysSeconds. Returns
    # Name and whether anything changed.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$BinaryPath,
        [string]$DisplayName = '',
        [string]$Description = '',
        [ValidateSet('Automatic', 'Manual', 'Disabled')][string]$StartupType = 'Automatic',
        [string[]]$DependsOn = @(),
        [int[]]$RestartDelaysSeconds = @(5, 10, 30),
        [int]$ResetPeriodSeconds = 86400
    )
    if ($DisplayName -eq '') {
        $DisplayName = $Name
    }
    $sc = Join-Path $env:SystemRoot 'System32\sc.exe'
    $changed = $false
    $existing = Get-WinfleetServiceRecord -Name $Name
    if ($null -eq $existing) {
        Write-WinfleetLog "creating service $Name"
        $create = @{ Name = $Name; BinaryPathName = $BinaryPath; DisplayName = $DisplayName; StartupType = $StartupType }
        if ($DependsOn.Count -gt 0) {
            $create.DependsOn = $DependsOn
        }
        New-Service @create | Out-Null
        $changed = $true
    }
    else {
        # Win32_Service reads 'Auto' but Change() takes 'Automatic'.
        $modes = @{ Automatic = 'Auto'; Manual = 'Manual'; Disabled = 'Disabled' }
        if ($existing.PathName -ne $BinaryPath -or $existing.StartMode -ne $modes[$StartupType] -or $existing.DisplayName -ne $DisplayName) {
            Write-WinfleetLog "updating service $Name in place"
            $result = Invoke-CimMethod -InputObject $existing -MethodName Change -Arguments @{ PathName = $BinaryPath; StartMode = $StartupType; DisplayName = $DisplayName }
            if ($result.ReturnValue -ne 0) {
                throw "changing service $Name failed: Win32_Service.Change returned $($result.ReturnValue)"
            }
            $changed = $true
        }
        $have = @((Get-Service -Name $Name).ServicesDependedOn | ForEach-Object { $_.Name } | Sort-Object)
        $want = @($DependsOn | Sort-Object)
        if (($have -join '/') -ne ($want -join '/')) {
            Write-WinfleetLog "setting the dependencies of $Name to '$($want -join ', ')'"
            $depend = '/'
            if ($want.Count -gt 0) {
                $depend = $want -join '/'
            }
            $null = Invoke-WinfleetNative -FilePath $sc -ArgumentList @('config', $Name, 'depend=', $depend)
            $changed = $true
        }
    }
    if ($Description -ne '') {
        Set-Service -Name $Name -Description $Description
    }
    $actions = @($RestartDelaysSeconds | ForEach-Object { 'restart/' + ($_ * 1000) }) -join '/'
    $null = Invoke-WinfleetNative -FilePath $sc -ArgumentList @('failure', $Name, 'reset=', [string]$ResetPeriodSeconds, 'actions=', $actions)
    # Failure actions also on a non-zero exit, not only on a crash.
    $null = Invoke-WinfleetNative -FilePath $sc -ArgumentList @('failureflag', $Name, '1')
    return [pscustomobject]@{ Name = $Name; Changed = $changed }
}

function Set-WinfleetHostedService {
    # Ensures Program (with Arguments) runs as service Name under NSSM:
    # output to LogFile, rotated at 10 MB, restarted when it exits, Environment
    # added to its own. Returns Name and whether anything changed.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$Program,
        [string]$Arguments = '',
        [string]$WorkingDirectory = '',
        [Parameter(Mandatory = $true)][string]$LogFile,
        [hashtable]$Environment = @{},
        [string]$DisplayName = '',
        [string]$Description = '',
        [ValidateSet('Automatic', 'Manual', 'Disabled')][string]$StartupType = 'Automatic',
        [string[]]$DependsOn = @(),
        [int[]]$RestartDelaysSeconds = @(5, 10, 30)
    )
    $nssm = Get-WinfleetNssmPath
    $service = Set-WinfleetService -Name $Name -BinaryPath ('"' + $nssm + '"') -DisplayName $DisplayName -Description $Description -StartupType $StartupType -DependsOn $DependsOn -RestartDelaysSeconds $RestartDelaysSeconds
    $changed = $service.Changed
    if ($WorkingDirectory -eq '') {
        $WorkingDirectory = Split-Path -Parent $Program
    }
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $LogFile) | Out-Null
    $key = "HKLM:\SYSTEM\CurrentControlSet\Services\$Name\Parameters"
    $settings = @(
        @{ Name = 'Application'; Value = $Program; Type = 'ExpandString' },
        @{ Name = 'AppParameters'; Value = $Arguments; Type = 'ExpandString' },
        @{ Name = 'AppDirectory'; Value = $WorkingDirectory; Type = 'ExpandString' },
        @{ Name = 'AppStdout'; Value = $LogFile; Type = 'ExpandString' },
        @{ Name = 'AppStderr'; Value = $LogFile; Type = 'ExpandString' },
        @{ Name = 'AppRotateFiles'; Value = 1; Type = 'DWord' },
        @{ Name = 'AppRotateOnline'; Value = 1; Type = 'DWord' },
        @{ Name = 'AppRotateBytes'; Value = 10485760; Type = 'DWord' },
        @{ Name = 'AppRestartDelay'; Value = 5000; Type = 'DWord' },
        @{ Name = 'AppThrottle'; Value = 1500; Type = 'DWord' }
    )
    foreach ($setting in $settings) {
        if ((Set-WinfleetRegistryValue -Path $key -Name $setting.Name -Value $setting.Value -Type $setting.Type).Changed) {
            $changed = $true
        }
    }
    $pairs = @($Environment.Keys | Sort-Object | ForEach-Object { "$_=$($Environment[$_])" })
    if ($pairs.Count -gt 0) {
        if ((Set-WinfleetRegistryValue -Path $key -Name 'AppEnvironmentExtra' -Value $pairs -Type 'MultiString').Changed) {
            $changed = $true
        }
    }
    elseif ((Remove-WinfleetRegistryValue -Path $key -Name 'AppEnvironmentExtra').Changed) {
        $changed = $true
    }
    if ((Set-WinfleetRegistryValue -Path "$key\AppExit" -Name '(default)' -Value 'Restart' -Type 'String').Changed) {
        $changed = $true
    }
    return [pscustomobject]@{ Name = $Name; Changed = $changed }
}

function Stop-WinfleetService {
    # Stops service Name if it exists and runs; ends its whole process tree
    # when it does not stop within TimeoutSeconds. Holds the node-services lock
    # meanwhile.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [int]$TimeoutSeconds = 60
    )
    $record = Get-WinfleetServiceRecord -Name $Name
    if ($null -eq $record -or $record.State -eq 'Stopped') {
        return
    }
    $lock = Enter-WinfleetNodeLock
    try {
        Write-WinfleetLog "stopping service $Name"
        Stop-Service -Name $Name -Force -NoWait
        try {
            Wait-WinfleetCondition -Description "service $Name to stop" -TimeoutSeconds $TimeoutSeconds -Condition {
                (Get-Service -Name $Name).Status -eq 'Stopped'
            }
        }
        catch {
            $processId = (Get-WinfleetServiceRecord -Name $Name).ProcessId
            if ($processId -gt 0) {
                $ended = Stop-WinfleetProcessTree -ProcessId $processId
                Write-WinfleetLog "service $Name did not stop in $TimeoutSeconds s; ended process $processId and its children ($ended processes)"
            }
        }
    }
    finally {
        Exit-WinfleetNodeLock -Lock $lock
    }
}

function Start-WinfleetService {
    # Starts service Name unless it runs, and waits until it does. The kubelet
    # and kube-proxy start only once the CNI has initialised since this boot
    # (Wait-WinfleetNetworkReady), and not at all while it is stopped. Holds
    # the node-services lock meanwhile.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [int]$TimeoutSeconds = 60
    )
    if ((Get-Service -Name $Name).Status -eq 'Running') {
        return
    }
    $lock = Enter-WinfleetNodeLock
    try {
        if ((Test-WinfleetNetworkService -Name $Name) -and -not (Wait-WinfleetNetworkReady)) {
            Write-WinfleetLog "service $Name starts once Calico runs and has initialised (CalicoNode is stopped; Calico's install or the boot task starts it)"
            return
        }
        Write-WinfleetLog "starting service $Name"
        Start-Service -Name $Name
        Wait-WinfleetCondition -Description "service $Name to run" -TimeoutSeconds $TimeoutSeconds -Condition {
            (Get-Service -Name $Name).Status -eq 'Running'
        }
    }
    finally {
        Exit-WinfleetNodeLock -Lock $lock
    }
}

function Remove-WinfleetService {
    # Stops and deletes service Name; nothing to do when it does not exist.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    $record = Get-WinfleetServiceRecord -Name $Name
    if ($null -eq $record) {
        return [pscustomobject]@{ Name = $Name; Changed = $false }
    }
    Stop-WinfleetService -Name $Name
    Write-WinfleetLog "deleting service $Name"
    $result = Invoke-CimMethod -InputObject $record -MethodName Delete
    # 1072: already marked for deletion; it goes once nothing holds it open.
    if ($result.ReturnValue -ne 0 -and $result.ReturnValue -ne 1072) {
        throw "deleting service $Name failed: Win32_Service.Delete returned $($result.ReturnValue)"
    }
    try {
        Wait-WinfleetCondition -Description "service $Name to be deleted" -TimeoutSeconds 60 -Condition {
            $null -eq (Get-WinfleetServiceRecord -Name $Name)
        }
    }
    catch {
        Write-Warning "service $Name is marked for deletion and goes once no program holds it open (close Services and Event Viewer)"
    }
    return [pscustomobject]@{ Name = $Name; Changed = $true }
}

function Get-WinfleetRunningDependents {
    # The running services that depend on Name, directly or not, nearest
    # first: the order to start them in again.
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    $ordered = New-Object System.Collections.Generic.List[string]
    $queue = New-Object System.Collections.Generic.Queue[string]
    $queue.Enqueue($Name)
    while ($queue.Count -gt 0) {
        $current = $queue.Dequeue()
        foreach ($dependent in @((Get-Service -Name $current).DependentServices)) {
            if ($dependent.Status -eq 'Running' -and -not $ordered.Contains($dependent.Name)) {
                $ordered.Add($dependent.Name)
                $queue.Enqueue($dependent.Name)
            }
        }
    }
    return $ordered.ToArray()
}

function Get-WinfleetSuspendRecord {
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    Assert-WinfleetServiceName -Name $Name
    return (Get-WinfleetPath -Relative "k\winfleet\state\suspended-$Name.json")
}

function Suspend-WinfleetService {
    # Stops service Name (and, as Windows does, the services that depend on
    # it) and records which of them ran, so Resume-WinfleetService brings back
    # exactly those, even after a crash or a reboot in between. A record left
    # by an earlier, interrupted suspend is kept: it knows what ran before.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    $record = Get-WinfleetSuspendRecord -Name $Name
    $service = Get-Service -Name $Name -ErrorAction SilentlyContinue
    if ($null -eq $service) {
        return
    }
    if (-not (Test-Path -LiteralPath $record)) {
        $running = @()
        if ($service.Status -eq 'Running') {
            $running = @($Name) + @(Get-WinfleetRunningDependents -Name $Name)
        }
        $null = Set-WinfleetFileContent -Path $record -Content (ConvertTo-Json -InputObject @{ running = $running })
    }
    Stop-WinfleetService -Name $Name
}

function Resume-WinfleetService {
    # Starts service Name, then the dependents Suspend-WinfleetService
    # recorded as running, and forgets the record.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    Start-WinfleetService -Name $Name
    $record = Get-WinfleetSuspendRecord -Name $Name
    if (-not (Test-Path -LiteralPath $record)) {
        return
    }
    $saved = Get-Content -Raw -LiteralPath $record | ConvertFrom-Json
    # The services that wait for the pod network after the ones that make it.
    $running = @($saved.running)
    $ordered = @($running | Where-Object { -not (Test-WinfleetNetworkService -Name $_) }) + @($running | Where-Object { (Test-WinfleetNetworkService -Name $_) -eq $true })
    foreach ($dependent in $ordered) {
        if ($dependent -ne $Name -and $null -ne (Get-Service -Name $dependent -ErrorAction SilentlyContinue)) {
            Start-WinfleetService -Name $dependent
        }
    }
    Remove-Item -LiteralPath $record -Force
}

function Restart-WinfleetService {
    # Restarts service Name and the running services that depend on it.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    Suspend-WinfleetService -Name $Name
    Resume-WinfleetService -Name $Name
}
