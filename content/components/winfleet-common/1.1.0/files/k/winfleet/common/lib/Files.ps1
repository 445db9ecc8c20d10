# Files: copies and writes that report whether anything changed, secret files
# that only SYSTEM and Administrators can read, and removal that tolerates
# what is already gone.

function Test-WinfleetFileCurrent {
    # Whether Destination already holds exactly Source's content.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Source,
        [Parameter(Mandatory = $true)][string]$Destination
    )
    if (-not (Test-Path -LiteralPath $Destination -PathType Leaf)) {
        return $false
    }
    $want = (Get-FileHash -LiteralPath $Source -Algorithm SHA256).Hash
    $have = (Get-FileHash -LiteralPath $Destination -Algorithm SHA256).Hash
    return ($want -eq $have)
}

function Install-WinfleetFile {
    # Copies Source to Destination unless the two already have the same
    # content; returns whether it copied (so the caller restarts a service only
    # when its binary changed).
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Source,
        [Parameter(Mandatory = $true)][string]$Destination
    )
    if (-not (Test-Path -LiteralPath $Source -PathType Leaf)) {
        throw "Install-WinfleetFile: $Source does not exist"
    }
    if (Test-WinfleetFileCurrent -Source $Source -Destination $Destination) {
        return $false
    }
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $Destination) | Out-Null
    Copy-Item -LiteralPath $Source -Destination $Destination -Force
    return $true
}

function Write-WinfleetFileAtomically {
    # Writes UTF-8 (no BOM) to a temporary file beside Path, then moves it over
    # Path, so a crash leaves the old file or the new one, never half of one.
    param(
        [Parameter(Mandatory = $true)][string]$Path,
        [Parameter(Mandatory = $true)][AllowEmptyString()][string]$Content
    )
    $temporary = "$Path.winfleet-tmp"
    $encoding = New-Object System.Text.UTF8Encoding -ArgumentList $false
    [System.IO.File]::WriteAllText($temporary, $Content, $encoding)
    Move-Item -LiteralPath $temporary -Destination $Path -Force
}

function Set-WinfleetFileContent {
    # Makes Path hold exactly Content (UTF-8, no BOM); returns whether it wrote.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path,
        [Parameter(Mandatory = $true)][AllowEmptyString()][string]$Content
    )
    if (Test-Path -LiteralPath $Path -PathType Leaf) {
        $current = [System.IO.File]::ReadAllText($Path)
        if ($current -ceq $Content) {
            return $false
        }
    }
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $Path) | Out-Null
    Write-WinfleetFileAtomically -Path $Path -Content $Content
    return $true
}

function Set-WinfleetRestrictedAcl {
    # Leaves Path readable by SYSTEM and Administrators only: inheritance cut,
    # every other entry removed.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path
    )
    $acl = Get-Acl -LiteralPath $Path
    $acl.SetAccessRuleProtection($true, $false)
    foreach ($rule in @($acl.Access)) {
        $null = $acl.RemoveAccessRule($rule)
    }
    $inheritance = 'None'
    if (Test-Path -LiteralPath $Path -PathType Container) {
        $inheritance = 'ContainerInherit, ObjectInherit'
    }
    foreach ($sid in @('S-1-5-18', 'S-1-5-32-544')) {
        $identity = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList $sid
        $rule = New-Object System.Security.AccessControl.FileSystemAccessRule -ArgumentList $identity, 'FullControl', $inheritance, 'None', 'Allow'
        $acl.AddAccessRule($rule)
    }
    Set-Acl -LiteralPath $Path -AclObject $acl
}

function Format-WinfleetAccessRule {
    # An access rule as comparable text: SID, rights, inheritance, propagation, allow/deny.
    param(
        [Parameter(Mandatory = $true)][System.Security.AccessControl.FileSystemAccessRule]$Rule
    )
    $sid = $Rule.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value
    return ('{0}|{1}|{2}|{3}|{4}' -f $sid, [int]$Rule.FileSystemRights, [int]$Rule.InheritanceFlags, [int]$Rule.PropagationFlags, $Rule.AccessControlType)
}

function Set-WinfleetDirectoryAcl {
    # Creates directory Path and gives it an explicit ACL (inheritance cut):
    # SYSTEM and Administrators full control, and unless Private, Users read
    # and execute only. The ACL C:\ hands down lets Users create files and
    # folders, which in a directory SYSTEM loads plugins or configuration from,
    # or one on the machine PATH, is a way to SYSTEM. By SID, so it works on
    # any display language. Returns whether the ACL changed.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path,
        [switch]$Private
    )
    New-Item -ItemType Directory -Force -Path $Path | Out-Null
    $grants = @(@('S-1-5-18', 'FullControl'), @('S-1-5-32-544', 'FullControl'))
    if (-not $Private) {
        $grants += , @('S-1-5-32-545', 'ReadAndExecute')
    }
    $rules = @(foreach ($grant in $grants) {
            $identity = New-Object System.Security.Principal.SecurityIdentifier -ArgumentList $grant[0]
            New-Object System.Security.AccessControl.FileSystemAccessRule -ArgumentList $identity, $grant[1], 'ContainerInherit, ObjectInherit', 'None', 'Allow'
        })
    $acl = Get-Acl -LiteralPath $Path
    $have = @($acl.Access | ForEach-Object { (Format-WinfleetAccessRule -Rule $_) } | Sort-Object) -join ';'
    $want = @($rules | ForEach-Object { (Format-WinfleetAccessRule -Rule $_) } | Sort-Object) -join ';'
    if ($acl.AreAccessRulesProtected -and $have -eq $want) {
        return $false
    }
    $acl.SetAccessRuleProtection($true, $false)
    foreach ($rule in @($acl.Access)) {
        $null = $acl.RemoveAccessRule($rule)
    }
    foreach ($rule in $rules) {
        $acl.AddAccessRule($rule)
    }
    Set-Acl -LiteralPath $Path -AclObject $acl
    Write-WinfleetLog "restricted the ACL of $Path"
    return $true
}

function Reset-WinfleetDirectoryAcl {
    # Gives directory Path back the ACL its parent hands down: inheritance on,
    # the explicit entries an earlier Set-WinfleetDirectoryAcl made removed.
    # What a directory needs whose files containers write through volumes.
    # Returns whether the ACL changed.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path
    )
    New-Item -ItemType Directory -Force -Path $Path | Out-Null
    $acl = Get-Acl -LiteralPath $Path
    $explicit = @($acl.Access | Where-Object { -not $_.IsInherited })
    if (-not $acl.AreAccessRulesProtected -and $explicit.Count -eq 0) {
        return $false
    }
    $acl.SetAccessRuleProtection($false, $false)
    foreach ($rule in $explicit) {
        $null = $acl.RemoveAccessRule($rule)
    }
    Set-Acl -LiteralPath $Path -AclObject $acl
    Write-WinfleetLog "gave $Path its inherited ACL back"
    return $true
}

function Remove-WinfleetOldLogs {
    # Deletes the rotated logs under Directory (and its subdirectories) older
    # than Days, and beyond the newest Keep of each service's log directory.
    # The live log (no rotation suffix) stays. Returns how many it deleted.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Directory,
        [int]$Days = 7,
        [int]$Keep = 10
    )
    if (-not (Test-Path -LiteralPath $Directory -PathType Container)) {
        return 0
    }
    $cutoff = (Get-Date).AddDays(-$Days)
    $deleted = 0
    $folders = @(Get-Item -LiteralPath $Directory) + @(Get-ChildItem -LiteralPath $Directory -Directory -Recurse)
    foreach ($folder in $folders) {
        # NSSM names a rotated log <name>-<yyyymmddThhmmss.mmm>.log; others end in a number or a date.
        $rotated = @(Get-ChildItem -LiteralPath $folder.FullName -File | Where-Object { $_.Name -match '(-\d{8}T\d{6}(\.\d+)?\.log|\.log\.\d+|\.\d{4}-\d{2}-\d{2}(\.log)?)$' } | Sort-Object -Property LastWriteTime -Descending)
        for ($i = 0; $i -lt $rotated.Count; $i++) {
            if ($i -ge $Keep -or $rotated[$i].LastWriteTime -lt $cutoff) {
                Remove-Item -LiteralPath $rotated[$i].FullName -Force -ErrorAction SilentlyContinue
                $deleted++
            }
        }
    }
    return $deleted
}

function Set-WinfleetSecretFile {
    # Writes a file that holds a secret: the ACL is restricted before the
    # secret is written, and nothing of Content is ever printed. Returns
    # whether it wrote.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path,
        [Parameter(Mandatory = $true)][string]$Content
    )
    New-Item -ItemType Directory -Force -Path (Split-Path -Parent $Path) | Out-Null
    if (-not (Test-Path -LiteralPath $Path -PathType Leaf)) {
        New-Item -ItemType File -Path $Path | Out-Null
    }
    Set-WinfleetRestrictedAcl -Path $Path
    $current = [System.IO.File]::ReadAllText($Path)
    if ($current -ceq $Content) {
        return $false
    }
    # Written in place: a temporary file beside it would carry the parent's
    # ACL, readable by more than SYSTEM and Administrators.
    $encoding = New-Object System.Text.UTF8Encoding -ArgumentList $false
    [System.IO.File]::WriteAllText($Path, $Content, $encoding)
    return $true
}

function Remove-WinfleetItem {
    # Removes a file or a directory tree; nothing there is not an error.
    [CmdletBinding()]
    param(
        [Parameter(Mandatory = $true)][string]$Path
    )
    if (Test-Path -LiteralPath $Path) {
        Remove-Item -LiteralPath $Path -Recurse -Force
        return $true
    }
    return $false
}
