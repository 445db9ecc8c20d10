# Host settings, each ensured and each undoable: firewall rules, Windows
# features, registry values, the machine PATH and environment, Microsoft
# Defender exclusions, scheduled tasks. Every Set/Add/Enable returns an object
# whose Changed says whether the host changed.

function Set-WinfleetFirewallRule {
    # Ensures an inbound allow rule Name for Protocol/LocalPort, replacing a
    # rule of that name that says anything else.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$DisplayName,
        [Parameter(Mandatory = $true)][ValidateSet('TCP', 'UDP')][string]$Protocol,
        [Parameter(Mandatory = $true)][int[]]$LocalPort
    )
    $wantPorts = @($LocalPort | Sort-Object | ForEach-Object { [string]$_ }) -join ','
    $rule = Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue
    if ($null -ne $rule) {
        $filter = $rule | Get-NetFirewallPortFilter
        $havePorts = @($filter.LocalPort | Sort-Object { [int]$_ }) -join ','
        if ([string]$filter.Protocol -eq $Protocol -and $havePorts -eq $wantPorts -and [string]$rule.Direction -eq 'Inbound' -and [string]$rule.Action -eq 'Allow' -and [string]$rule.Enabled -eq 'True') {
            return [pscustomobject]@{ Name = $Name; Changed = $false }
        }
        Remove-NetFirewallRule -Name $Name
    }
    Write-WinfleetLog "opening $Protocol $wantPorts inbound (firewall rule $Name)"
    New-NetFirewallRule -Name $Name -DisplayName $DisplayName -Group 'winfleet' -Direction Inbound -Protocol $Protocol -LocalPort $LocalPort -Action Allow -Profile Any -Enabled True | Out-Null
    return [pscustomobject]@{ Name = $Name; Changed = $true }
}

function Remove-WinfleetFirewallRule {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    if ($null -eq (Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue)) {
        return [pscustomobject]@{ Name = $Name; Changed = $false }
    }
    Remove-NetFirewallRule -Name $Name
    return [pscustomobject]@{ Name = $Name; Changed = $true }
}

function Enable-WinfleetFeature {
    # Ensures the optional Windows feature Name is enabled. RestartNeeded is
    # true when it was just enabled and Windows needs a restart (or an earlier
    # enable is still pending one): the calling script then ends with
    # `exit 3010` so the agent reboots the host and carries on after it.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    $feature = Get-WindowsOptionalFeature -Online -FeatureName $Name
    if ($null -eq $feature) {
        throw "the Windows feature $Name does not exist on this host"
    }
    $state = [string]$feature.State
    if ($state -eq 'Enabled') {
        return [pscustomobject]@{ Name = $Name; Changed = $false; RestartNeeded = $false }
    }
    if ($state -eq 'EnablePending') {
        return [pscustomobject]@{ Name = $Name; Changed = $false; RestartNeeded = $true }
    }
    Write-WinfleetLog "enabling the Windows feature $Name"
    $result = Enable-WindowsOptionalFeature -Online -FeatureName $Name -All -NoRestart
    return [pscustomobject]@{ Name = $Name; Changed = $true; RestartNeeded = [bool]$result.RestartNeeded }
}

function Disable-WinfleetFeature {
    # The inverse of Enable-WinfleetFeature, with the same RestartNeeded.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    $feature = Get-WindowsOptionalFeature -Online -FeatureName $Name
    if ($null -eq $feature) {
        return [pscustomobject]@{ Name = $Name; Changed = $false; RestartNeeded = $false }
    }
    $state = [string]$feature.State
    if ($state -eq 'Disabled' -or $state -eq 'DisabledWithPayloadRemoved') {
        return [pscustomobject]@{ Name = $Name; Changed = $false; RestartNeeded = $false }
    }
    if ($state -eq 'DisablePending') {
        return [pscustomobject]@{ Name = $Name; Changed = $false; RestartNeeded = $true }
    }
    Write-WinfleetLog "disabling the Windows feature $Name"
    $result = Disable-WindowsOptionalFeature -Online -FeatureName $Name -NoRestart
    return [pscustomobject]@{ Name = $Name; Changed = $true; RestartNeeded = [bool]$result.RestartNeeded }
}

function Set-WinfleetRegistryValue {
    # Ensures registry value Name under Path (a provider path such as
    # HKLM:\SOFTWARE\...) holds Value with kind Type; '(default)' is the key's
    # default value. Creates the key when missing.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path,
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][AllowEmptyString()]$Value,
        [Parameter(Mandatory = $true)][ValidateSet('String', 'ExpandString', 'DWord', 'QWord', 'MultiString')][string]$Type
    )
    if (-not (Test-Path -LiteralPath $Path)) {
        New-Item -Path $Path -Force | Out-Null
    }
    $valueName = $Name
    if ($Name -eq '(default)') {
        $valueName = ''
    }
    $key = Get-Item -LiteralPath $Path
    $current = $key.GetValue($valueName, $null, 'DoNotExpandEnvironmentNames')
    if ($null -ne $current -and [string]$key.GetValueKind($valueName) -eq $Type) {
        $same = $false
        if ($Type -eq 'MultiString') {
            $same = ((@($current) -join "`n") -ceq (@($Value) -join "`n"))
        }
        else {
            $same = ([string]$current -ceq [string]$Value)
        }
        if ($same) {
            return [pscustomobject]@{ Path = $Path; Name = $Name; Changed = $false }
        }
    }
    New-ItemProperty -LiteralPath $Path -Name $Name -Value $Value -PropertyType $Type -Force | Out-Null
    return [pscustomobject]@{ Path = $Path; Name = $Name; Changed = $true }
}

function Remove-WinfleetRegistryValue {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path,
        [Parameter(Mandatory = $true)][string]$Name
    )
    if (-not (Test-Path -LiteralPath $Path)) {
        return [pscustomobject]@{ Path = $Path; Name = $Name; Changed = $false }
    }
    $key = Get-Item -LiteralPath $Path
    if ($key.GetValueNames() -notcontains $Name) {
        return [pscustomobject]@{ Path = $Path; Name = $Name; Changed = $false }
    }
    Remove-ItemProperty -LiteralPath $Path -Name $Name
    return [pscustomobject]@{ Path = $Path; Name = $Name; Changed = $true }
}

$script:MachineEnvironmentKey = 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Environment'

function Get-WinfleetMachinePathEntries {
    $key = Get-Item -LiteralPath $script:MachineEnvironmentKey
    # Unexpanded, so %SystemRoot%-style entries survive a rewrite.
    $raw = [string]$key.GetValue('Path', '', 'DoNotExpandEnvironmentNames')
    return @($raw -split ';' | Where-Object { $_ -ne '' })
}

function Add-WinfleetPathEntry {
    # Ensures Path is on the machine PATH (kept REG_EXPAND_SZ) and on this
    # process's PATH.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path
    )
    $entries = Get-WinfleetMachinePathEntries
    $present = @($entries | Where-Object { $_.TrimEnd('\') -ieq $Path.TrimEnd('\') }).Count -gt 0
    if (-not (@($env:Path -split ';') | Where-Object { $_.TrimEnd('\') -ieq $Path.TrimEnd('\') })) {
        $env:Path = $env:Path.TrimEnd(';') + ';' + $Path
    }
    if ($present) {
        return [pscustomobject]@{ Path = $Path; Changed = $false }
    }
    Write-WinfleetLog "adding $Path to the machine PATH"
    $null = Set-WinfleetRegistryValue -Path $script:MachineEnvironmentKey -Name 'Path' -Value ((@($entries) + $Path) -join ';') -Type 'ExpandString'
    return [pscustomobject]@{ Path = $Path; Changed = $true }
}

function Remove-WinfleetPathEntry {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path
    )
    $entries = Get-WinfleetMachinePathEntries
    $kept = @($entries | Where-Object { $_.TrimEnd('\') -ine $Path.TrimEnd('\') })
    if ($kept.Count -eq $entries.Count) {
        return [pscustomobject]@{ Path = $Path; Changed = $false }
    }
    Write-WinfleetLog "removing $Path from the machine PATH"
    $null = Set-WinfleetRegistryValue -Path $script:MachineEnvironmentKey -Name 'Path' -Value ($kept -join ';') -Type 'ExpandString'
    return [pscustomobject]@{ Path = $Path; Changed = $true }
}

function Set-WinfleetMachineEnvironment {
    # Ensures machine environment variable Name is Value (services read it
    # when they next start).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$Value
    )
    return (Set-WinfleetRegistryValue -Path $script:MachineEnvironmentKey -Name $Name -Value $Value -Type 'String')
}

function Remove-WinfleetMachineEnvironment {
    # Removes machine environment variable Name; with Value, only while it
    # still holds that value (someone else may have set it since).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [string]$Value = ''
    )
    $key = Get-Item -LiteralPath $script:MachineEnvironmentKey
    $current = $key.GetValue($Name, $null, 'DoNotExpandEnvironmentNames')
    if ($null -eq $current -or ($Value -ne '' -and [string]$current -cne $Value)) {
        return [pscustomobject]@{ Path = $script:MachineEnvironmentKey; Name = $Name; Changed = $false }
    }
    return (Remove-WinfleetRegistryValue -Path $script:MachineEnvironmentKey -Name $Name)
}

$script:ProxyVariables = @('HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY')

function Get-WinfleetProxyEnvironment {
    # The proxy variables set in the machine environment (prereqs sets them), as
    # a hashtable: what the node services need in their own environment, since
    # the service manager hands them the machine environment it read at boot.
    [CmdletBinding()]
    param()
    $key = Get-Item -LiteralPath $script:MachineEnvironmentKey
    $environment = @{}
    foreach ($name in $script:ProxyVariables) {
        $value = [string]$key.GetValue($name, '', 'DoNotExpandEnvironmentNames')
        if ($value -ne '') {
            $environment[$name] = $value
        }
    }
    return $environment
}

function Set-WinfleetServiceProxyEnvironment {
    # Puts the machine's proxy variables into service Name's own environment
    # (the service key's Environment value; for a service under NSSM, its
    # AppEnvironmentExtra), keeping every other entry, so the service sees a
    # proxy change at its next start without a reboot. Returns whether the
    # service's environment changed (the caller restarts it).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [switch]$Hosted
    )
    $key = "HKLM:\SYSTEM\CurrentControlSet\Services\$Name"
    $valueName = 'Environment'
    if ($Hosted) {
        $key = "$key\Parameters"
        $valueName = 'AppEnvironmentExtra'
    }
    if (-not (Test-Path -LiteralPath $key)) {
        return $false
    }
    $current = @((Get-Item -LiteralPath $key).GetValue($valueName, @(), 'DoNotExpandEnvironmentNames'))
    $kept = @($current | Where-Object { $script:ProxyVariables -notcontains ([string]$_ -split '=', 2)[0].ToUpperInvariant() })
    $proxy = Get-WinfleetProxyEnvironment
    $wanted = @($kept) + @($proxy.Keys | Sort-Object | ForEach-Object { "$_=$($proxy[$_])" })
    if ($wanted.Count -eq 0) {
        return (Remove-WinfleetRegistryValue -Path $key -Name $valueName).Changed
    }
    return (Set-WinfleetRegistryValue -Path $key -Name $valueName -Value ([string[]]$wanted) -Type 'MultiString').Changed
}

function Test-WinfleetDefender {
    # Whether Microsoft Defender runs here and takes preferences: its cmdlets
    # exist on hosts where a third-party antivirus disabled it, and there
    # Get-MpPreference throws (0x800106ba).
    if ($null -eq (Get-Command -Name 'Add-MpPreference' -ErrorAction SilentlyContinue)) {
        return $false
    }
    $service = Get-Service -Name 'WinDefend' -ErrorAction SilentlyContinue
    if ($null -eq $service -or $service.Status -ne 'Running') {
        return $false
    }
    try {
        $null = Get-MpComputerStatus
        return $true
    }
    catch {
        Write-Warning "Microsoft Defender does not answer ($($_.Exception.Message)): leaving its exclusions alone"
        return $false
    }
}

function Add-WinfleetDefenderExclusion {
    # Ensures Microsoft Defender skips Path (directories) and Process
    # (executables); a host without Defender needs nothing.
    [CmdletBinding()]
    param(
        [string[]]$Path = @(),
        [string[]]$Process = @()
    )
    if (-not (Test-WinfleetDefender)) {
        Write-WinfleetLog 'Microsoft Defender is not installed or not running: no exclusions to add'
        return [pscustomobject]@{ Changed = $false }
    }
    $preferences = Get-MpPreference
    $paths = @($Path | Where-Object { @($preferences.ExclusionPath) -notcontains $_ })
    $processes = @($Process | Where-Object { @($preferences.ExclusionProcess) -notcontains $_ })
    if ($paths.Count -gt 0) {
        Add-MpPreference -ExclusionPath $paths
    }
    if ($processes.Count -gt 0) {
        Add-MpPreference -ExclusionProcess $processes
    }
    return [pscustomobject]@{ Changed = ($paths.Count + $processes.Count) -gt 0 }
}

function Remove-WinfleetDefenderExclusion {
    [CmdletBinding()]
    param(
        [string[]]$Path = @(),
        [string[]]$Process = @()
    )
    if (-not (Test-WinfleetDefender)) {
        return [pscustomobject]@{ Changed = $false }
    }
    $preferences = Get-MpPreference
    $paths = @($Path | Where-Object { @($preferences.ExclusionPath) -contains $_ })
    $processes = @($Process | Where-Object { @($preferences.ExclusionProcess) -contains $_ })
    if ($paths.Count -gt 0) {
        Remove-MpPreference -ExclusionPath $paths
    }
    if ($processes.Count -gt 0) {
        Remove-MpPreference -ExclusionProcess $processes
    }
    return [pscustomobject]@{ Changed = ($paths.Count + $processes.Count) -gt 0 }
}

function Set-WinfleetScheduledTask {
    # Ensures task \winfleet\Name runs ScriptPath (with Arguments) as SYSTEM at
    # every startup, or every day at DailyAt when it is given. A run that fails
    # (a non-zero exit) is started again, RestartCount times, RestartMinutes
    # apart.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$ScriptPath,
        [string]$Arguments = '',
        [string]$Description = '',
        [string]$DailyAt = '',
        [int]$RestartCount = 3,
        [int]$RestartMinutes = 1
    )
    $powershell = Join-Path $env:SystemRoot 'System32\WindowsPowerShell\v1.0\powershell.exe'
    $argument = ('-NoProfile -NonInteractive -ExecutionPolicy Bypass -File "{0}" {1}' -f $ScriptPath, $Arguments).TrimEnd()
    $triggerClass = 'MSFT_TaskBootTrigger'
    if ($DailyAt -ne '') {
        $triggerClass = 'MSFT_TaskDailyTrigger'
    }
    $interval = 'PT{0}M' -f $RestartMinutes
    $existing = Get-ScheduledTask -TaskName $Name -TaskPath '\winfleet\' -ErrorAction SilentlyContinue
    if ($null -ne $existing) {
        $action = @($existing.Actions)[0]
        $trigger = @($existing.Triggers)[0]
        $settings = $existing.Settings
        if ($action.Execute -eq $powershell -and $action.Arguments -eq $argument -and $null -ne $trigger -and $trigger.CimClass.CimClassName -eq $triggerClass -and $existing.Principal.UserId -match 'SYSTEM$' -and $settings.RestartCount -eq $RestartCount -and $settings.RestartInterval -eq $interval) {
            return [pscustomobject]@{ Name = $Name; Changed = $false }
        }
    }
    Write-WinfleetLog "registering the task \winfleet\$Name"
    $when = New-ScheduledTaskTrigger -AtStartup
    if ($DailyAt -ne '') {
        $when = New-ScheduledTaskTrigger -Daily -At $DailyAt
    }
    $task = @{
        TaskName    = $Name
        TaskPath    = '\winfleet\'
        Action      = New-ScheduledTaskAction -Execute $powershell -Argument $argument
        Trigger     = $when
        Principal   = New-ScheduledTaskPrincipal -UserId 'NT AUTHORITY\SYSTEM' -LogonType ServiceAccount -RunLevel Highest
        Settings    = New-ScheduledTaskSettingsSet -AllowStartIfOnBatteries -DontStopIfGoingOnBatteries -StartWhenAvailable -MultipleInstances IgnoreNew -ExecutionTimeLimit (New-TimeSpan -Minutes 30) -RestartCount $RestartCount -RestartInterval (New-TimeSpan -Minutes $RestartMinutes)
        Description = $Description
        Force       = $true
    }
    Register-ScheduledTask @task | Out-Null
    return [pscustomobject]@{ Name = $Name; Changed = $true }
}

function Remove-WinfleetScheduledTask {
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name
    )
    if ($null -eq (Get-ScheduledTask -TaskName $Name -TaskPath '\winfleet\' -ErrorAction SilentlyContinue)) {
        return [pscustomobject]@{ Name = $Name; Changed = $false }
    }
    Unregister-ScheduledTask -TaskName $Name -TaskPath '\winfleet\' -Confirm:$false
    return [pscustomobject]@{ Name = $Name; Changed = $true }
}
