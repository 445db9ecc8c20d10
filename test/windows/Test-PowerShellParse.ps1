# Parses every PowerShell script in the repository's content (and these tests)
# with PowerShell's own parser, [System.Management.Automation.Language.Parser]::ParseFile,
# in whichever PowerShell runs it (Windows PowerShell 5.1 or PowerShell 7), and
# every PowerShell command in the components' metadata with ParseInput. Exits 1
# listing each error with its file, position and PowerShell's error id.
$ErrorActionPreference = 'Stop'
$repository = (Resolve-Path -LiteralPath (Join-Path $PSScriptRoot '..\..')).Path
$failures = New-Object System.Collections.Generic.List[string]
$scripts = @(Get-ChildItem -LiteralPath (Join-Path $repository 'content'), $PSScriptRoot -Recurse -File -Include '*.ps1', '*.psm1', '*.psd1')
foreach ($script in $scripts) {
    $tokens = $null
    $errors = $null
    $null = [System.Management.Automation.Language.Parser]::ParseFile($script.FullName, [ref]$tokens, [ref]$errors)
    foreach ($e in @($errors)) {
        $failures.Add(('{0}:{1}:{2}: {3}: {4}' -f $script.FullName.Substring($repository.Length + 1), $e.Extent.StartLineNumber, $e.Extent.StartColumnNumber, $e.ErrorId, $e.Message))
    }
}
$commands = 0
foreach ($metadata in @(Get-ChildItem -LiteralPath (Join-Path $repository 'content\components') -Recurse -File -Filter 'metadata.json')) {
    $component = Get-Content -Raw -LiteralPath $metadata.FullName | ConvertFrom-Json
    if ($component.shell -eq 'sh') {
        continue
    }
    foreach ($section in @('install', 'uninstall', 'pre_upgrade', 'post_upgrade')) {
        foreach ($role in @('lprecmds', 'commands', 'lpstcmds')) {
            $list = $null
            if ($null -ne $component.$section) {
                $list = $component.$section.$role
            }
            foreach ($command in @($list | Where-Object { $null -ne $_ })) {
                $commands++
                $tokens = $null
                $errors = $null
                $null = [System.Management.Automation.Language.Parser]::ParseInput([string]$command, [ref]$tokens, [ref]$errors)
                foreach ($e in @($errors)) {
                    $failures.Add(('{0} {1}.{2}: {3}: {4}' -f $metadata.FullName.Substring($repository.Length + 1), $section, $role, $e.ErrorId, $e.Message))
                }
            }
        }
    }
}
Write-Output ("PowerShell {0}: parsed {1} scripts and {2} metadata commands" -f $PSVersionTable.PSVersion, $scripts.Count, $commands)
if ($failures.Count -gt 0) {
    $failures | ForEach-Object { Write-Output $_ }
    exit 1
}
exit 0
