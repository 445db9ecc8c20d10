# PSScriptAnalyzer settings for the content's PowerShell (the CI workflow
# windows.yml runs Invoke-ScriptAnalyzer -Settings with this file). Errors and
# warnings fail the run; the rules left out say why.
@{
    Severity     = @('Error', 'Warning')
    ExcludeRules = @(
        # Component scripts report progress to the agent's step log through
        # Write-WinfleetLog, which writes to the host on purpose.
        'PSAvoidUsingWriteHost',
        # Set-/Remove- helpers are idempotent "ensure" operations run by the
        # agent, never interactively: -WhatIf/-Confirm would mean nothing there.
        'PSUseShouldProcessForStateChangingFunctions',
        # Helper names follow the content's vocabulary (Set-WinfleetService
        # returns a record of what it changed).
        'PSUseSingularNouns',
        # The scripts are ASCII-only; a BOM would change nothing.
        'PSUseBOMForUnicodeEncodedFile',
        # Invoke-WinfleetNative resets and reads $global:LASTEXITCODE, which is
        # where PowerShell leaves a native program's exit code.
        'PSAvoidGlobalVars'
    )
    Rules        = @{
        PSUseCompatibleSyntax = @{
            Enable         = $true
            TargetVersions = @('5.1', '7.4')
        }
    }
}
