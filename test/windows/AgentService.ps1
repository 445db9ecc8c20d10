# Generated from components/agent-service.ts (agentServiceFunction) and kept equal to it by
# components/agent-service.test.ts: the bootstrap's agent service registration, for the Pester
# tests to run on a real Windows host. Do not edit; change the TypeScript and copy its output.
function Register-WinfleetAgentService {
    # Creates service Name (NSSM hosting Node with Arguments), or converges it in
    # place: binary path, delayed automatic start, NSSM's settings, the failure
    # actions. Returns whether the service or its settings changed.
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [Parameter(Mandatory = $true)][string]$Nssm,
        [Parameter(Mandatory = $true)][string]$Node,
        [Parameter(Mandatory = $true)][string]$Arguments,
        [Parameter(Mandatory = $true)][string]$Directory,
        [Parameter(Mandatory = $true)][string]$LogFile
    )
    if ($Name -notmatch '^[A-Za-z0-9_.-]+$') {
        throw "service name '$Name' may hold letters, digits, '-', '_' and '.' only"
    }
    $changed = $false
    $binary = '"' + $Nssm + '"'
    $displayName = 'winfleet agent'
    $service = Get-CimInstance -ClassName Win32_Service -Filter "Name='$Name'"
    if ($null -eq $service) {
        New-Service -Name $Name -BinaryPathName $binary -DisplayName $displayName -StartupType Automatic | Out-Null
        $changed = $true
    }
    elseif ($service.PathName -ne $binary -or $service.StartMode -ne 'Auto' -or $service.DisplayName -ne $displayName) {
        # Win32_Service reads 'Auto' but Change() takes 'Automatic'.
        $result = Invoke-CimMethod -InputObject $service -MethodName Change -Arguments @{ PathName = $binary; StartMode = 'Automatic'; DisplayName = $displayName }
        if ($result.ReturnValue -ne 0) {
            throw "changing service $Name failed: Win32_Service.Change returned $($result.ReturnValue)"
        }
        $changed = $true
    }
    $sc = Join-Path $env:SystemRoot 'System32\sc.exe'
    $key = "HKLM:\SYSTEM\CurrentControlSet\Services\$Name"
    # Delayed: the agent starts once the network and the boot-time services have, through
    # the SCM (which keeps its own copy of a service's start settings, so not by registry).
    if ((Get-Item -LiteralPath $key).GetValue('DelayedAutostart', 0) -ne 1) {
        $null = & $sc 'config' $Name 'start=' 'delayed-auto'
        if ($LASTEXITCODE -ne 0) {
            throw "sc.exe could not make $Name start delayed ($LASTEXITCODE)"
        }
        $changed = $true
    }
    Set-Service -Name $Name -Description 'winfleet: the node agent (lifecycle engine, broker, reporter), Node.js under NSSM'
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $LogFile) | Out-Null
    # AppExit Exit: NSSM does not restart the agent itself but stops the service, with the
    # agent's exit code, so the SCM's failure actions are the one supervisor.
    # AppKillProcessTree 0: a stop ends the agent only; a detached self-upgrade it started
    # must outlive the stop it asked for. Ctrl+C first, 15 s to shut down cleanly.
    $settings = @(
        @{ Path = "$key\Parameters"; Name = 'Application'; Value = $Node; Type = 'ExpandString' },
        @{ Path = "$key\Parameters"; Name = 'AppParameters'; Value = $Arguments; Type = 'ExpandString' },
        @{ Path = "$key\Parameters"; Name = 'AppDirectory'; Value = $Directory; Type = 'ExpandString' },
        @{ Path = "$key\Parameters"; Name = 'AppStdout'; Value = $LogFile; Type = 'ExpandString' },
        @{ Path = "$key\Parameters"; Name = 'AppStderr'; Value = $LogFile; Type = 'ExpandString' },
        @{ Path = "$key\Parameters"; Name = 'AppRotateFiles'; Value = 1; Type = 'DWord' },
        @{ Path = "$key\Parameters"; Name = 'AppRotateOnline'; Value = 1; Type = 'DWord' },
        @{ Path = "$key\Parameters"; Name = 'AppRotateBytes'; Value = 10485760; Type = 'DWord' },
        @{ Path = "$key\Parameters"; Name = 'AppStopMethodConsole'; Value = 15000; Type = 'DWord' },
        @{ Path = "$key\Parameters"; Name = 'AppKillProcessTree'; Value = 0; Type = 'DWord' },
        @{ Path = "$key\Parameters\AppExit"; Name = '(default)'; Value = 'Exit'; Type = 'String' }
    )
    foreach ($setting in $settings) {
        if (-not (Test-Path -LiteralPath $setting.Path)) {
            New-Item -Path $setting.Path -Force | Out-Null
        }
        $valueName = $setting.Name
        if ($valueName -eq '(default)') {
            $valueName = ''
        }
        $item = Get-Item -LiteralPath $setting.Path
        $have = $item.GetValue($valueName, $null, 'DoNotExpandEnvironmentNames')
        if ($null -eq $have -or [string]$item.GetValueKind($valueName) -ne $setting.Type -or [string]$have -cne [string]$setting.Value) {
            New-ItemProperty -LiteralPath $setting.Path -Name $setting.Name -Value $setting.Value -PropertyType $setting.Type -Force | Out-Null
            $changed = $true
        }
    }
    # Setting them again is harmless: sc.exe writes the same values.
    $null = & $sc 'failure' $Name 'reset=' '86400' 'actions=' 'restart/5000/restart/10000/restart/30000'
    if ($LASTEXITCODE -ne 0) {
        throw "sc.exe could not set the failure actions of $Name ($LASTEXITCODE)"
    }
    # Failure actions also for a stop with an error code (the agent exited), not only a crash.
    $null = & $sc 'failureflag' $Name '1'
    if ($LASTEXITCODE -ne 0) {
        throw "sc.exe could not set the failure flag of $Name ($LASTEXITCODE)"
    }
    return $changed
}
