# Runs the Pester tests (Pester 5) of winfleet-common and the agent service in the PowerShell that runs
# this script, and exits non-zero when any fails.
$ErrorActionPreference = 'Stop'
Import-Module Pester -MinimumVersion 5.5.0
$configuration = New-PesterConfiguration
$configuration.Run.Path = Join-Path $PSScriptRoot 'WinfleetCommon.Tests.ps1'
$configuration.Run.Exit = $true
$configuration.Output.Verbosity = 'Detailed'
Invoke-Pester -Configuration $configuration
