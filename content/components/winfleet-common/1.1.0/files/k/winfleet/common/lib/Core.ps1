# Core helpers: where things live, reading variables, logging, native tools
# whose exit codes are checked, and bounded waits.

function Get-WinfleetRoot {
    # The host path of "/" for content (C:\ on a node); every path a component
    # touches is under it, so a test root stays self-contained.
    [CmdletBinding()]
    param()
    $root = [Environment]::GetEnvironmentVariable('WINFLEET_ROOT', 'Process')
    if ([string]::IsNullOrEmpty($root)) {
        throw 'WINFLEET_ROOT is not set: winfleet content runs under winfleet-agent, which sets it'
    }
    if (-not [System.IO.Path]::IsPathRooted($root)) {
        throw "WINFLEET_ROOT must be an absolute path, got '$root'"
    }
    return $root
}

function Get-WinfleetPath {
    # A path below the content root, given with backslashes: 'k\kubelet.exe'.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Relative
    )
    return (Join-Path (Get-WinfleetRoot) $Relative)
}

function Get-WinfleetVariable {
    # An optional variable: its value, or Default when it is unset or empty.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [string]$Default = ''
    )
    $value = [Environment]::GetEnvironmentVariable($Name, 'Process')
    if ([string]::IsNullOrEmpty($value)) {
        return $Default
    }
    return $value
}

function Assert-WinfleetVariable {
    # A required variable, checked against Pattern. The error names the
    # variable and what was expected, never the value (it may be a secret).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Name,
        [string]$Pattern = '',
        [string]$Expected = ''
    )
    $value = [Environment]::GetEnvironmentVariable($Name, 'Process')
    if ([string]::IsNullOrEmpty($value)) {
        throw "variable $Name is required but has no value (set it in the template or the agent config)"
    }
    if ($Pattern -ne '' -and $value -notmatch $Pattern) {
        throw "variable $Name is not $Expected"
    }
    return $value
}

function Write-WinfleetLog {
    # One timestamped line on the information stream (the agent keeps it in
    # the step's output); never on the success stream, so functions that
    # return values stay clean.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Message
    )
    Write-Host ('[{0}] {1}' -f (Get-Date -Format 'yyyy-MM-ddTHH:mm:ss'), $Message)
}

function Invoke-WinfleetNative {
    # Runs a native program and fails unless its exit code is one of
    # SuccessExitCodes: PowerShell never fails a step on a native exit code by
    # itself. Returns the program's output lines (stdout and stderr; with
    # StdoutOnly, stdout alone: what a caller parses, which a warning on
    # stderr must not end up in). A failure's message holds both.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$FilePath,
        [string[]]$ArgumentList = @(),
        [int[]]$SuccessExitCodes = @(0),
        [switch]$StdoutOnly
    )
    foreach ($argument in $ArgumentList) {
        # Windows PowerShell 5.1 mangles embedded quotes and drops empty
        # arguments; refuse them rather than run something else.
        if ([string]::IsNullOrEmpty($argument) -or $argument.Contains('"')) {
            throw "Invoke-WinfleetNative: an argument to $FilePath is empty or holds a double quote"
        }
    }
    # With 'Stop', Windows PowerShell turns the first stderr line of a native
    # program into a terminating error; collect it as text instead.
    $saved = $ErrorActionPreference
    $ErrorActionPreference = 'Continue'
    try {
        $global:LASTEXITCODE = 0
        $raw = & $FilePath @ArgumentList 2>&1
        $code = $global:LASTEXITCODE
    }
    finally {
        $ErrorActionPreference = $saved
    }
    $lines = @($raw | ForEach-Object { "$_" })
    if ($SuccessExitCodes -notcontains $code) {
        $tail = ($lines | Select-Object -Last 20) -join [Environment]::NewLine
        throw "$FilePath exited with $code`n$tail"
    }
    if ($StdoutOnly) {
        return @($raw | Where-Object { $_ -isnot [System.Management.Automation.ErrorRecord] } | ForEach-Object { "$_" })
    }
    return $lines
}

function Wait-WinfleetCondition {
    # Polls Condition until it returns true, for at most TimeoutSeconds.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][scriptblock]$Condition,
        [Parameter(Mandatory = $true)][string]$Description,
        [int]$TimeoutSeconds = 120,
        [int]$IntervalSeconds = 2
    )
    $deadline = (Get-Date).AddSeconds($TimeoutSeconds)
    while ($true) {
        if (& $Condition) {
            return
        }
        if ((Get-Date) -ge $deadline) {
            throw "timed out after $TimeoutSeconds s waiting for $Description"
        }
        Start-Sleep -Seconds $IntervalSeconds
    }
}
