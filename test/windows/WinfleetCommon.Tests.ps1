# Pester 5 tests of the winfleet-common helpers on a real Windows host (the
# windows.yml workflow runs them in Windows PowerShell 5.1 and PowerShell 7,
# as Administrator). Each helper that changes the host is run twice, the
# second time changing nothing, and its undo is shown to remove what it made.
# Everything lives under a scratch content root or a name unique to the run.

BeforeAll {
    $repository = (Resolve-Path -LiteralPath (Join-Path $PSScriptRoot '..\..')).Path
    $env:WINFLEET_ROOT = Join-Path ([System.IO.Path]::GetTempPath()) ('winfleet-pester-' + [guid]::NewGuid().ToString('N'))
    New-Item -ItemType Directory -Force -Path $env:WINFLEET_ROOT | Out-Null
    Import-Module (Join-Path $repository 'content\components\winfleet-common\1.1.0\files\k\winfleet\common\WinfleetCommon.psm1') -Force
    $script:Run = [guid]::NewGuid().ToString('N').Substring(0, 8)
    $script:System = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList 'S-1-5-18'
    $script:Administrators = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList 'S-1-5-32-544'
    $script:Users = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList 'S-1-5-32-545'
    function Get-Grantees([string]$Path) {
        return @((Get-Acl -LiteralPath $Path).Access | ForEach-Object { $_.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value } | Sort-Object -Unique)
    }
}

AfterAll {
    Remove-Item -Recurse -Force -LiteralPath $env:WINFLEET_ROOT -ErrorAction SilentlyContinue
}

Describe 'files' {
    It 'writes a file once (UTF-8, no BOM), then changes nothing, and removes it' {
        $path = Join-Path $env:WINFLEET_ROOT 'etc\pester\a.txt'
        Set-WinfleetFileContent -Path $path -Content 'one' | Should -BeTrue
        Set-WinfleetFileContent -Path $path -Content 'one' | Should -BeFalse
        [System.IO.File]::ReadAllBytes($path) | Should -Be ([byte[]][char[]]'one')
        Remove-WinfleetItem -Path $path | Should -BeTrue
        Remove-WinfleetItem -Path $path | Should -BeFalse
        Test-Path -LiteralPath $path | Should -BeFalse
    }

    It 'keeps a secret file to SYSTEM and Administrators' {
        $path = Join-Path $env:WINFLEET_ROOT 'etc\pester\secret.conf'
        Set-WinfleetSecretFile -Path $path -Content 'token: x' | Should -BeTrue
        Set-WinfleetSecretFile -Path $path -Content 'token: x' | Should -BeFalse
        Get-Grantees $path | Should -Be @($script:System.Value, $script:Administrators.Value | Sort-Object)
    }

    It 'restricts a directory by SID: Users read only, or nobody else when private; the second run changes nothing' {
        $open = Join-Path $env:WINFLEET_ROOT 'opt\cni'
        Set-WinfleetDirectoryAcl -Path $open | Should -BeTrue
        Set-WinfleetDirectoryAcl -Path $open | Should -BeFalse
        $acl = Get-Acl -LiteralPath $open
        $acl.AreAccessRulesProtected | Should -BeTrue
        $users = @($acl.Access | Where-Object { $_.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value -eq $script:Users.Value })
        $users.Count | Should -Be 1
        ($users[0].FileSystemRights -band [System.Security.AccessControl.FileSystemRights]::Write) | Should -Be 0
        $private = Join-Path $env:WINFLEET_ROOT 'var\lib\kubelet\pki'
        Set-WinfleetDirectoryAcl -Path $private -Private | Should -BeTrue
        Set-WinfleetDirectoryAcl -Path $private -Private | Should -BeFalse
        Get-Grantees $private | Should -Be @($script:System.Value, $script:Administrators.Value | Sort-Object)
    }
}

Describe 'registry, machine environment and PATH' {
    It 'sets a registry value once and removes it' {
        $key = "HKLM:\SOFTWARE\winfleet-pester-$($script:Run)"
        (Set-WinfleetRegistryValue -Path $key -Name 'Value' -Value 'x' -Type 'String').Changed | Should -BeTrue
        (Set-WinfleetRegistryValue -Path $key -Name 'Value' -Value 'x' -Type 'String').Changed | Should -BeFalse
        (Set-WinfleetRegistryValue -Path $key -Name 'List' -Value @('a', 'b') -Type 'MultiString').Changed | Should -BeTrue
        (Set-WinfleetRegistryValue -Path $key -Name 'List' -Value @('a', 'b') -Type 'MultiString').Changed | Should -BeFalse
        (Remove-WinfleetRegistryValue -Path $key -Name 'Value').Changed | Should -BeTrue
        (Remove-WinfleetRegistryValue -Path $key -Name 'Value').Changed | Should -BeFalse
        Remove-Item -LiteralPath $key -Recurse -Force
    }

    It 'sets a machine environment variable once and removes it only while it holds our value' {
        $name = "WINFLEET_PESTER_$($script:Run)"
        (Set-WinfleetMachineEnvironment -Name $name -Value 'a').Changed | Should -BeTrue
        (Set-WinfleetMachineEnvironment -Name $name -Value 'a').Changed | Should -BeFalse
        (Remove-WinfleetMachineEnvironment -Name $name -Value 'other').Changed | Should -BeFalse
        (Remove-WinfleetMachineEnvironment -Name $name -Value 'a').Changed | Should -BeTrue
        [Environment]::GetEnvironmentVariable($name, 'Machine') | Should -BeNullOrEmpty
    }

    It 'adds a PATH entry once, keeps PATH REG_EXPAND_SZ, and removes it' {
        $entry = Join-Path $env:WINFLEET_ROOT "bin-$($script:Run)"
        (Add-WinfleetPathEntry -Path $entry).Changed | Should -BeTrue
        (Add-WinfleetPathEntry -Path $entry).Changed | Should -BeFalse
        $environmentKey = Get-Item -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
        [string]$environmentKey.GetValueKind('Path') | Should -Be 'ExpandString'
        (Remove-WinfleetPathEntry -Path $entry).Changed | Should -BeTrue
        (Remove-WinfleetPathEntry -Path $entry).Changed | Should -BeFalse
        ([Environment]::GetEnvironmentVariable('Path', 'Machine') -split ';') | Should -Not -Contain $entry
    }
}

Describe 'firewall rules, scheduled tasks and services' {
    It 'opens a firewall rule once and removes it' {
        $name = "winfleet-pester-$($script:Run)"
        (Set-WinfleetFirewallRule -Name $name -DisplayName $name -Protocol 'UDP' -LocalPort 4789).Changed | Should -BeTrue
        (Set-WinfleetFirewallRule -Name $name -DisplayName $name -Protocol 'UDP' -LocalPort 4789).Changed | Should -BeFalse
        (Remove-WinfleetFirewallRule -Name $name).Changed | Should -BeTrue
        (Remove-WinfleetFirewallRule -Name $name).Changed | Should -BeFalse
        Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue | Should -BeNullOrEmpty
    }

    It 'registers a startup task once and removes it' {
        $name = "winfleet-pester-$($script:Run)"
        $script = Join-Path $env:WINFLEET_ROOT 'k\task.ps1'
        $null = Set-WinfleetFileContent -Path $script -Content 'exit 0'
        (Set-WinfleetScheduledTask -Name $name -ScriptPath $script -Description 'pester').Changed | Should -BeTrue
        (Set-WinfleetScheduledTask -Name $name -ScriptPath $script -Description 'pester').Changed | Should -BeFalse
        (Remove-WinfleetScheduledTask -Name $name).Changed | Should -BeTrue
        (Remove-WinfleetScheduledTask -Name $name).Changed | Should -BeFalse
    }

    It 'puts the machine proxy into a service''s own environment once, keeping its other entries' {
        $name = "winfleet-pester-env-$($script:Run)"
        $binary = Join-Path $env:SystemRoot 'System32\svchost.exe'
        $null = Set-WinfleetService -Name $name -BinaryPath $binary -StartupType 'Manual'
        $key = "HKLM:\SYSTEM\CurrentControlSet\Services\$name"
        $null = Set-WinfleetRegistryValue -Path $key -Name 'Environment' -Value @('KEEP=1') -Type 'MultiString'
        $saved = [Environment]::GetEnvironmentVariable('HTTPS_PROXY', 'Machine')
        try {
            $null = Set-WinfleetMachineEnvironment -Name 'HTTPS_PROXY' -Value 'http://proxy.invalid:3128'
            Set-WinfleetServiceProxyEnvironment -Name $name | Should -BeTrue
            Set-WinfleetServiceProxyEnvironment -Name $name | Should -BeFalse
            (Get-Item -LiteralPath $key).GetValue('Environment') | Should -Contain 'KEEP=1'
            (Get-Item -LiteralPath $key).GetValue('Environment') | Should -Contain 'HTTPS_PROXY=http://proxy.invalid:3128'
        }
        finally {
            if ($null -eq $saved) {
                $null = Remove-WinfleetMachineEnvironment -Name 'HTTPS_PROXY' -Value 'http://proxy.invalid:3128'
            }
            else {
                $null = Set-WinfleetMachineEnvironment -Name 'HTTPS_PROXY' -Value $saved
            }
            $null = Remove-WinfleetService -Name $name
        }
    }

    It 'creates a service once (start on demand) and deletes it' {
        $name = "winfleet-pester-$($script:Run)"
        $binary = Join-Path $env:SystemRoot 'System32\svchost.exe'
        (Set-WinfleetService -Name $name -BinaryPath $binary -StartupType 'Manual').Changed | Should -BeTrue
        (Set-WinfleetService -Name $name -BinaryPath $binary -StartupType 'Manual').Changed | Should -BeFalse
        (Get-Service -Name $name).StartType | Should -Be 'Manual'
        (Remove-WinfleetService -Name $name).Changed | Should -BeTrue
        (Remove-WinfleetService -Name $name).Changed | Should -BeFalse
    }
}

Describe 'native programs, waits and process trees' {
    It 'fails on an unexpected exit code and accepts the listed ones' {
        { Invoke-WinfleetNative -FilePath 'cmd.exe' -ArgumentList @('/c', 'exit', '3') } | Should -Throw '*exited with 3*'
        Invoke-WinfleetNative -FilePath 'cmd.exe' -ArgumentList @('/c', 'echo', 'fine') -SuccessExitCodes @(0) | Should -Be 'fine'
        { Invoke-WinfleetNative -FilePath 'cmd.exe' -ArgumentList @('/c', 'echo "x"') } | Should -Throw '*double quote*'
    }

    It 'gives up a wait after its timeout' {
        { Wait-WinfleetCondition -Description 'never' -TimeoutSeconds 1 -IntervalSeconds 1 -Condition { $false } } | Should -Throw '*timed out after 1 s waiting for never*'
    }

    It 'ends a process and the processes it started' {
        $parent = Start-Process -FilePath 'cmd.exe' -ArgumentList '/c', 'ping.exe -n 600 127.0.0.1 > nul' -PassThru -WindowStyle Hidden
        Wait-WinfleetCondition -Description 'the child' -TimeoutSeconds 30 -IntervalSeconds 1 -Condition {
            $null -ne (Get-CimInstance -ClassName Win32_Process -Filter "ParentProcessId = $($parent.Id)")
        }
        $child = (Get-CimInstance -ClassName Win32_Process -Filter "ParentProcessId = $($parent.Id)" | Select-Object -First 1).ProcessId
        Stop-WinfleetProcessTree -ProcessId $parent.Id | Should -BeGreaterOrEqual 2
        Start-Sleep -Seconds 1
        Get-Process -Id $child -ErrorAction SilentlyContinue | Should -BeNullOrEmpty
        Get-Process -Id $parent.Id -ErrorAction SilentlyContinue | Should -BeNullOrEmpty
    }

    It 'holds the node lock re-entrantly, and another process waits for it' {
        $outer = Enter-WinfleetNodeLock
        $inner = Enter-WinfleetNodeLock
        $job = Start-Job -ScriptBlock {
            $mutex = New-Object System.Threading.Mutex -ArgumentList $false, 'Global\winfleet-node-services'
            $mutex.WaitOne(1000)
        }
        Receive-Job -Job $job -Wait -AutoRemoveJob | Should -BeFalse
        Exit-WinfleetNodeLock -Lock $inner
        Exit-WinfleetNodeLock -Lock $outer
        $job = Start-Job -ScriptBlock {
            $mutex = New-Object System.Threading.Mutex -ArgumentList $false, 'Global\winfleet-node-services'
            $taken = $mutex.WaitOne(1000)
            if ($taken) {
                $mutex.ReleaseMutex()
            }
            $taken
        }
        Receive-Job -Job $job -Wait -AutoRemoveJob | Should -BeTrue
    }
}

Describe 'cluster helpers' {
    It 'writes a kubeconfig with a token and the CA file' {
        $text = ConvertTo-WinfleetKubeconfig -Server 'https://10.0.0.4:6443' -CertificateAuthorityPath 'C:\etc\kubernetes\pki\ca.crt' -UserName 'winfleet-kube-proxy' -Token 'abc'
        $config = $text | ConvertFrom-Json
        $config.kind | Should -Be 'Config'
        $config.users[0].user.token | Should -Be 'abc'
        $config.clusters[0].cluster.'certificate-authority' | Should -Be 'C:\etc\kubernetes\pki\ca.crt'
    }

    It 'starts nothing that waits for the pod network when no CNI is installed' {
        Get-Service -Name 'CalicoNode' -ErrorAction SilentlyContinue | Should -BeNullOrEmpty
        Wait-WinfleetNetworkReady -TimeoutSeconds 1 | Should -BeTrue
    }
}

Describe 'the agent service the bootstrap registers' {
    BeforeAll {
        # The registration the bootstrap renders (AgentService.ps1 is kept equal to it), run
        # with NSSM from the content's pinned artifact and a stand-in agent on the runner's Node.js.
        . (Join-Path $PSScriptRoot 'AgentService.ps1')
        $artifact = Get-WinfleetArtifact -Manifest (Join-Path $repository 'content\components\winfleet-common\1.1.0\files\k\winfleet\common\artifacts.json') -Name 'nssm'
        $staging = Expand-WinfleetArtifact -Artifact $artifact -Destination (Join-Path $env:WINFLEET_ROOT 'nssm')
        $script:AgentName = "winfleet-pester-agent-$($script:Run)"
        $script:AgentDir = Join-Path $env:WINFLEET_ROOT 'agent'
        New-Item -ItemType Directory -Force -Path $script:AgentDir | Out-Null
        $script:PidFile = Join-Path $script:AgentDir 'agent.pid'
        $agent = Join-Path $script:AgentDir 'agent.js'
        # Records its process id and stays up, as the agent does.
        [System.IO.File]::WriteAllText($agent, "require('fs').writeFileSync(process.argv[2], String(process.pid)); setInterval(() => {}, 1000);")
        $script:Registration = @{
            Name      = $script:AgentName
            Nssm      = (Join-Path $staging 'nssm-2.24\win64\nssm.exe')
            Node      = (Get-Command -Name 'node.exe' -CommandType Application | Select-Object -First 1).Source
            Arguments = '"' + $agent + '" "' + $script:PidFile + '"'
            Directory = $script:AgentDir
            LogFile   = (Join-Path $script:AgentDir 'logs\agent.log')
        }
        function Wait-AgentPid([int]$Not) {
            $deadline = (Get-Date).AddSeconds(60)
            while ((Get-Date) -lt $deadline) {
                if (Test-Path -LiteralPath $script:PidFile) {
                    $found = [int](Get-Content -Raw -LiteralPath $script:PidFile)
                    if ($found -ne $Not) {
                        return $found
                    }
                }
                Start-Sleep -Milliseconds 500
            }
            throw "no agent process recorded itself within 60 s"
        }
    }

    AfterAll {
        Stop-Service -Name $script:AgentName -Force -ErrorAction SilentlyContinue
        & sc.exe delete $script:AgentName | Out-Null
    }

    It 'registers it once: delayed automatic start, LocalSystem, the failure actions and the failure flag, rotated output' {
        $registration = $script:Registration
        Register-WinfleetAgentService @registration | Should -BeTrue
        Register-WinfleetAgentService @registration | Should -BeFalse
        $service = Get-CimInstance -ClassName Win32_Service -Filter "Name='$($script:AgentName)'"
        $service.StartMode | Should -Be 'Auto'
        $service.DelayedAutoStart | Should -BeTrue
        $service.StartName | Should -Be 'LocalSystem'
        $failure = (& sc.exe qfailure $script:AgentName) -join "`n"
        $failure | Should -Match 'RESET_PERIOD \(in seconds\)\s*:\s*86400'
        foreach ($delay in @(5000, 10000, 30000)) {
            $failure | Should -Match "RESTART -- Delay = $delay milliseconds"
        }
        ((& sc.exe qfailureflag $script:AgentName) -join "`n") | Should -Match 'FAILURE_ACTIONS_ON_NONCRASH_FAILURES\s*:\s*TRUE'
        $parameters = Get-ItemProperty -LiteralPath "HKLM:\SYSTEM\CurrentControlSet\Services\$($script:AgentName)\Parameters"
        $parameters.AppRotateFiles | Should -Be 1
        $parameters.AppKillProcessTree | Should -Be 0
        (Get-Item -LiteralPath "HKLM:\SYSTEM\CurrentControlSet\Services\$($script:AgentName)\Parameters\AppExit").GetValue('') | Should -Be 'Exit'
    }

    It 'runs the agent, the SCM starts it again when it dies, and registering again leaves it running' {
        Start-Service -Name $script:AgentName
        $first = Wait-AgentPid -Not 0
        Stop-Process -Id $first -Force
        # NSSM stops the service with the agent's exit code; the first failure action starts it 5 s later.
        $second = Wait-AgentPid -Not $first
        $second | Should -Not -Be $first
        (Get-Service -Name $script:AgentName).Status | Should -Be 'Running'
        $registration = $script:Registration
        Register-WinfleetAgentService @registration | Should -BeFalse
        Start-Sleep -Seconds 2
        [int](Get-Content -Raw -LiteralPath $script:PidFile) | Should -Be $second
        Get-Process -Id $second | Should -Not -BeNullOrEmpty
    }
}

Describe 'node services that come back' {
    It 'starts every service, goes past one that fails, and retries it until it runs' {
        $script:State = @{ a = 'Stopped'; b = 'Stopped'; c = 'Stopped' }
        $script:Calls = New-Object System.Collections.Generic.List[string]
        Mock -ModuleName WinfleetCommon Get-Service {
            [pscustomobject]@{ Name = $Name; Status = $script:State[$Name]; StartType = 'Automatic' }
        }
        Mock -ModuleName WinfleetCommon -CommandName Start-Sleep -MockWith { $null = $Seconds }
        Mock -ModuleName WinfleetCommon Start-WinfleetService {
            $script:Calls.Add($Name)
            if ($Name -eq 'b' -and @($script:Calls | Where-Object { $_ -eq 'b' }).Count -lt 2) {
                throw 'the first start of b fails'
            }
            $script:State[$Name] = 'Running'
        }
        $left = Start-WinfleetNodeServices -Names @('a', 'b', 'c') -Attempts 3 -DelaySeconds 1
        @($left).Count | Should -Be 0
        ($script:Calls -join ',') | Should -Be 'a,b,c,b'
        Should -Invoke -ModuleName WinfleetCommon Start-Sleep -Times 1 -Exactly
    }

    It 'returns what still does not run after the last attempt, and leaves disabled services alone' {
        $script:Calls = New-Object System.Collections.Generic.List[string]
        Mock -ModuleName WinfleetCommon Get-Service {
            $startType = 'Automatic'
            if ($Name -eq 'off') {
                $startType = 'Disabled'
            }
            [pscustomobject]@{ Name = $Name; Status = 'Stopped'; StartType = $startType }
        }
        Mock -ModuleName WinfleetCommon -CommandName Start-Sleep -MockWith { $null = $Seconds }
        Mock -ModuleName WinfleetCommon Start-WinfleetService { $script:Calls.Add($Name); throw "$Name does not start" }
        $left = Start-WinfleetNodeServices -Names @('down', 'off') -Attempts 3 -DelaySeconds 1
        @($left) | Should -Be @('down')
        ($script:Calls -join ',') | Should -Be 'down,down,down'
    }

    It 'waits for a need until it comes, and gives up after its timeout' {
        $file = Join-Path $env:WINFLEET_ROOT 'etc\pester\credentials.conf'
        { Wait-WinfleetServiceNeeds -Needs @('file') -Paths @($file) -TimeoutSeconds 2 -IntervalSeconds 1 } | Should -Throw '*waited*'
        $null = Set-WinfleetFileContent -Path $file -Content 'x'
        Wait-WinfleetServiceNeeds -Needs @('file') -Paths @($file) -TimeoutSeconds 2 -IntervalSeconds 1
    }

    It 'takes the HNS reset as done where no reset task is registered, and records this boot' {
        Test-WinfleetHnsResetDone | Should -BeTrue
        Set-WinfleetHnsResetDone
        Get-Content -Raw -LiteralPath (Join-Path $env:WINFLEET_ROOT 'k\winfleet\state\hns-reset-boot.txt') | Should -Match '^\d{4}-\d{2}-\d{2}T'
    }

    It 'registers a task that runs again after a failed run, daily or at startup' {
        $name = "winfleet-pester-retry-$($script:Run)"
        $script = Join-Path $env:WINFLEET_ROOT 'k\retry.ps1'
        $null = Set-WinfleetFileContent -Path $script -Content 'exit 1'
        (Set-WinfleetScheduledTask -Name $name -ScriptPath $script -RestartCount 3 -RestartMinutes 1).Changed | Should -BeTrue
        (Set-WinfleetScheduledTask -Name $name -ScriptPath $script -RestartCount 3 -RestartMinutes 1).Changed | Should -BeFalse
        $task = Get-ScheduledTask -TaskName $name -TaskPath '\winfleet\'
        $task.Settings.RestartCount | Should -Be 3
        $task.Settings.RestartInterval | Should -Be 'PT1M'
        (Set-WinfleetScheduledTask -Name $name -ScriptPath $script -DailyAt '03:00').Changed | Should -BeTrue
        @((Get-ScheduledTask -TaskName $name -TaskPath '\winfleet\').Triggers)[0].CimClass.CimClassName | Should -Be 'MSFT_TaskDailyTrigger'
        (Remove-WinfleetScheduledTask -Name $name).Changed | Should -BeTrue
    }
}

Describe 'builds, logs and ACLs of the second pass' {
    It 'supports DSR from 17763.1432 on, and refuses a build below the CNI floor, naming both builds' {
        Test-WinfleetDsrSupported -Build 17763 -Revision 1431 | Should -BeFalse
        Test-WinfleetDsrSupported -Build 17763 -Revision 1432 | Should -BeTrue
        Test-WinfleetDsrSupported -Build 20348 -Revision 1 | Should -BeTrue
        Test-WinfleetOsBuildFloor -Build 17763 -Revision 1000 | Should -Match '17763\.1000.*17763\.1432'
        Test-WinfleetOsBuildFloor -Build 20348 -Revision 100 | Should -Match '20348\.100.*20348\.169'
        Test-WinfleetOsBuildFloor -Build 20348 -Revision 169 | Should -Be ''
        Test-WinfleetOsBuildFloor -Build 26100 -Revision 1 | Should -Be ''
    }

    It 'deletes rotated logs past their age or count, and never the live log' {
        $directory = Join-Path $env:WINFLEET_ROOT 'var\log\pester'
        New-Item -ItemType Directory -Force -Path $directory | Out-Null
        $live = Join-Path $directory 'kubelet.log'
        $null = Set-WinfleetFileContent -Path $live -Content 'live'
        (Get-Item -LiteralPath $live).LastWriteTime = (Get-Date).AddDays(-30)
        foreach ($age in 1..5) {
            $rotated = Join-Path $directory ('kubelet-2026010{0}T000000.000.log' -f $age)
            $null = Set-WinfleetFileContent -Path $rotated -Content 'old'
            (Get-Item -LiteralPath $rotated).LastWriteTime = (Get-Date).AddDays(-$age * 3)
        }
        # Ages 3, 6, 9, 12, 15 days: with 7 days and 10 files, the three older than a week go.
        Remove-WinfleetOldLogs -Directory (Join-Path $env:WINFLEET_ROOT 'var\log') -Days 7 -Keep 10 | Should -Be 3
        # Of the two left, the newest one stays with Keep 1.
        Remove-WinfleetOldLogs -Directory (Join-Path $env:WINFLEET_ROOT 'var\log') -Days 7 -Keep 1 | Should -Be 1
        Test-Path -LiteralPath $live | Should -BeTrue
    }

    It 'gives a directory an earlier restriction took its inherited ACL back, once' {
        $path = Join-Path $env:WINFLEET_ROOT 'var\lib\kubelet-pester'
        $null = Set-WinfleetDirectoryAcl -Path $path
        Reset-WinfleetDirectoryAcl -Path $path | Should -BeTrue
        Reset-WinfleetDirectoryAcl -Path $path | Should -BeFalse
        $acl = Get-Acl -LiteralPath $path
        $acl.AreAccessRulesProtected | Should -BeFalse
        @($acl.Access | Where-Object { -not $_.IsInherited }).Count | Should -Be 0
    }

    It 'returns a native program''s stdout alone when asked, both streams otherwise' {
        $cmd = Join-Path $env:SystemRoot 'System32\cmd.exe'
        $both = Invoke-WinfleetNative -FilePath $cmd -ArgumentList @('/c', 'echo', 'out&', 'echo', 'err', '1>&2')
        $only = Invoke-WinfleetNative -FilePath $cmd -ArgumentList @('/c', 'echo', 'out&', 'echo', 'err', '1>&2') -StdoutOnly
        ($both -join ',') | Should -Match 'err'
        ($only -join ',') | Should -Not -Match 'err'
        ($only -join ',') | Should -Match 'out'
    }
}
