# Writes the sandbox node's configuration from template variables. Idempotent:
# the same variables always give the same file.
$ErrorActionPreference = 'Stop'
$etc = Join-Path $env:WINFLEET_ROOT 'winfleet/sandbox/etc'
New-Item -ItemType Directory -Force -Path $etc | Out-Null
$config = [ordered]@{
    node       = $env:WINFLEET_NODE_NAME
    greeting   = $env:SANDBOX_GREETING
    written_by = "$($env:WINFLEET_COMPONENT) $($env:WINFLEET_COMPONENT_VERSION)"
}
$path = Join-Path $etc 'node.json'
$config | ConvertTo-Json | Set-Content -LiteralPath $path -Encoding utf8NoBOM
Write-Output "wrote $path"
