/**
 * The PowerShell that runs one invocation, as a pure function of nothing: the
 * same text defines the session's helper and serves as the isolated runner's
 * script. It works around what node-powershell cannot do (its pitfalls are in
 * the reference notes: any stderr fails a call, no exit code, a REPL-like
 * `-Command -`, unsafe template escaping):
 *
 * - the command runs from a file (`command.ps1`), so it parses as a whole and
 *   multi-line constructs work; data arrives only through `env.json`, set as
 *   process environment variables and restored afterwards;
 * - every output stream is captured and written to files (`stdout.txt`,
 *   `stderr.txt`), nothing reaches the session's own stderr; error records and
 *   the exit code go to `result.json`;
 * - the exit code follows the contract: `exit N` gives N, an uncaught
 *   terminating error gives 1, completing normally gives 0 (a line the runner
 *   appends after the command records that it completed).
 *
 * The invocation directory's path is the only value built into code, and it
 * is the runner's own (checked to hold no quote).
 */

/** Appended to every command: reached only when the command ran to its end. */
export const COMPLETED_MARKER = "$global:WinfleetCommandCompleted = $true";

/** The helper function; defined once per session, or dot-sourced by the isolated runner. */
export function powerShellInvoker(): string {
  return `function global:Invoke-WinfleetCommand {
    param(
        [Parameter(Mandatory = $true)][string]$Dir
    )
    $utf8 = New-Object System.Text.UTF8Encoding -ArgumentList $false
    $outWriter = New-Object System.IO.StreamWriter -ArgumentList (Join-Path $Dir 'stdout.txt'), $false, $utf8
    $errWriter = New-Object System.IO.StreamWriter -ArgumentList (Join-Path $Dir 'stderr.txt'), $false, $utf8
    $records = New-Object System.Collections.Generic.List[string]
    $saved = @{}
    $values = Get-Content -Raw -Encoding UTF8 -LiteralPath (Join-Path $Dir 'env.json') | ConvertFrom-Json
    foreach ($p in $values.PSObject.Properties) {
        $saved[$p.Name] = [Environment]::GetEnvironmentVariable($p.Name, 'Process')
        [Environment]::SetEnvironmentVariable($p.Name, [string]$p.Value, 'Process')
    }
    $cwd = Get-Content -Raw -Encoding UTF8 -LiteralPath (Join-Path $Dir 'cwd.txt')
    $global:WinfleetCommandCompleted = $false
    $global:LASTEXITCODE = 0
    $code = 0
    Push-Location -LiteralPath $cwd
    try {
        & {
            $ErrorActionPreference = 'Stop'
            $ProgressPreference = 'SilentlyContinue'
            & (Join-Path $Dir 'command.ps1')
        } *>&1 | ForEach-Object {
            $item = $_
            if ($item -is [System.Management.Automation.ErrorRecord]) {
                $records.Add((Format-WinfleetRecord $item))
                $errWriter.WriteLine(($item | Out-String -Width 4096).TrimEnd())
            }
            elseif ($item -is [System.Management.Automation.WarningRecord]) {
                $errWriter.WriteLine('WARNING: ' + $item.Message)
            }
            elseif ($item -is [System.Management.Automation.VerboseRecord] -or $item -is [System.Management.Automation.DebugRecord]) {
                $errWriter.WriteLine($item.Message)
            }
            elseif ($item -is [string]) {
                $outWriter.WriteLine($item)
            }
            else {
                $outWriter.WriteLine(($item | Out-String -Width 4096).TrimEnd())
            }
        }
        if (-not $global:WinfleetCommandCompleted) { $code = $global:LASTEXITCODE }
    }
    catch {
        $records.Add((Format-WinfleetRecord $_))
        $errWriter.WriteLine(($_ | Out-String -Width 4096).TrimEnd())
        $code = 1
    }
    finally {
        Pop-Location
        foreach ($name in $saved.Keys) { [Environment]::SetEnvironmentVariable($name, $saved[$name], 'Process') }
        $outWriter.Dispose()
        $errWriter.Dispose()
    }
    if ($null -eq $code) { $code = 0 }
    $result = [ordered]@{ exitCode = [int]$code; errorRecords = @($records) }
    $json = ConvertTo-Json -InputObject $result -Depth 4 -Compress
    [System.IO.File]::WriteAllText((Join-Path $Dir 'result.json'), $json, $utf8)
}

function global:Format-WinfleetRecord {
    param($Record)
    $position = ''
    if ($Record.InvocationInfo -and $Record.InvocationInfo.ScriptLineNumber -gt 0) {
        $position = ' (line ' + $Record.InvocationInfo.ScriptLineNumber + ')'
    }
    return ($Record.CategoryInfo.Category.ToString() + ': ' + $Record.Exception.Message + $position)
}
`;
}

/** The line a session invokes for one directory. */
export function invocationLine(dir: string): string {
  if (/['\u2018\u2019\u201a\u201b]/.test(dir)) throw new Error(`invocation directory ${dir} holds a quote`);
  return `Invoke-WinfleetCommand -Dir '${dir}'`;
}

/** The script an isolated invocation runs with `-File`: the helper, then one call. */
export function isolatedScript(): string {
  return `param(
    [Parameter(Mandatory = $true)][string]$Dir
)
${powerShellInvoker()}
Invoke-WinfleetCommand -Dir $Dir
`;
}
