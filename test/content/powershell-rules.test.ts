/**
 * The PowerShell parse rules (agent/content/powershell-rules.ts): a corpus of
 * constructs Windows PowerShell 5.1's own parser rejects, each of which must
 * be reported under PowerShell's error id, and constructs it accepts, which
 * must not be; then every script in content/, every metadata command and
 * every rendered bootstrap (all content modes, every secret path) under the
 * same rules.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { POWERSHELL_RULE_IDS } from "../../agent/content/powershell-rules";
import { renderBootstrap, type BootstrapArgs, type ContentSource } from "../../components/bootstrap";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";

const CONTENT = join(__dirname, "..", "..", "content");

/** Constructs PowerShell rejects, with the error id its parser reports. */
const REJECTED: readonly (readonly [id: (typeof POWERSHELL_RULE_IDS)[number], source: string])[] = [
  ["InvalidVariableReferenceWithDrive", 'throw "NSSM is missing at $nssm: winfleet-common installs it"'],
  ["InvalidVariableReferenceWithDrive", 'Write-Output "$Message: waiting"'],
  ["InvalidVariableReferenceWithDrive", '"$x:"'],
  ["InvalidVariableReferenceWithDrive", "Write-Output $x: y"],
  ["InvalidVariableReferenceWithDrive", '"time $h:$m"'],
  ["InvalidVariableReferenceWithDrive", '@"\nline $name: here\n"@'],
  ["InvalidVariableReferenceWithDrive", '"$(Get-Date) $env: x"'],
  ["InvalidVariableReference", '"$script: x"'],
  ["InvalidVariableReference", "$global: = 1"],
  ["EmptyVariableReference", '"${}"'],
  ["EmptyVariableReference", "${} = 1"],
  ["IncompleteDollarVariableReference", "${name"],
  ["InvalidBracedVariableReference", "${env:}"],
  ["MissingEndCurlyBrace", "function Install-It {\n  if ($x -eq 1) {\n    Write-Output 'x'\n"],
  ["MissingEndCurlyBrace", "$h = @{ a = 1"],
  ["MissingEndParenthesisInExpression", "$x = @(1, 2"],
  ["MissingEndParenthesisInExpression", "if ($x -eq 1 { }"],
  ["MissingEndSquareBracket", "$a = [int"],
  ["UnexpectedToken", "Get-Item )"],
  ["UnexpectedToken", "}"],
  ["UnexpectedToken", "$a = 1 2"],
  ["UnexpectedToken", '"a" "b"'],
  ["UnexpectedToken", "$a = $b ?? 'x'"],
  ["UnexpectedToken", "$a = $b ? 1 : 2"],
  ["MissingExpressionAfterOperator", "$a = 1 +"],
  ["MissingExpressionAfterOperator", "$ok = $a -eq"],
  ["MissingExpressionAfterOperator", "$a = -"],
  ["EmptyPipeElement", "Get-Item |"],
  ["EmptyPipeElement", "| Get-Item"],
  ["EmptyPipeElement", "Get-Item | | Select-Object"],
  ["EmptyPipeElement", "$x = (Get-Item |)"],
  ["ExpressionsMustBeFirstInPipeline", "Get-Item | $x"],
  ["ExpressionsMustBeFirstInPipeline", "Get-Item | 'a'"],
  ["InvalidLeftHandSide", "1 = 2"],
  ["InvalidLeftHandSide", "'a' = 1"],
  ["InvalidLeftHandSide", "$a + $b = 1"],
  ["InvalidLeftHandSide", "$a.Method() = 1"],
  ["InvalidLeftHandSide", "$a, 1 = 1, 2"],
  ["InvalidLeftHandSide", "$a, $b += 1"],
  ["InvalidLeftHandSide", "(Get-Item x) = 1"],
  ["MissingArgument", "Get-Item -Path, 'x'"],
  ["ParameterRequiresArgument", "Get-Item -Path:"],
  ["ParameterRequiresArgument", "Get-Item -Path: | Out-Null"],
  ["TerminatorExpectedAtEndOfString", "$a = 'abc"],
  ["TerminatorExpectedAtEndOfString", '$a = "abc'],
  ["TerminatorExpectedAtEndOfString", "$a = @'\nabc\n '@"],
  ["TerminatorExpectedAtEndOfString", '$a = @"\nabc\n'],
  ["UnexpectedCharactersAfterHereStringHeader", "$a = @'abc\n'@"],
  ["MissingTerminatorMultiLineComment", "<# never closed\nWrite-Output 1"],
  ["DuplicateKeyInHashLiteral", "@{ a = 1; A = 2 }"],
  ["DuplicateKeyInHashLiteral", "[ordered]@{ 'kind' = 1\n kind = 2 }"],
  ["DuplicateKeyInHashLiteral", '@{ "x" = 1; x = 2 }'],
  ["DuplicateFormalParameter", "function f($a, $A) { }"],
  ["DuplicateFormalParameter", "function f {\n  param($Name, $name)\n}"],
  ["MissingCatchOrFinally", "try { Get-Item x }"],
  ["InvalidEndOfLine", "Get-Item x && Get-Item y"],
  ["InvalidEndOfLine", "Get-Item x || throw 'no'"],
  ["AmpersandNotAllowed", "Start-Job { 1 } &"],
  ["RedirectionNotSupported", "Get-Content < file.txt"],
  ["RedirectionNotSupported", "Get-Item x 2>&3"],
  ["RedirectionNotSupported", "Get-Item x 1>&1"],
  ["MissingFileSpecification", "Get-Item x >"],
  ["MissingFileSpecification", "Get-Item x 2>> | Out-Null"],
];

/** Constructs PowerShell accepts, several of them near misses of the rules above. */
const ACCEPTED: readonly string[] = [
  'throw "NSSM is missing at ${nssm}: winfleet-common installs it"',
  '"$env:Path"',
  '"$env:ProgramFiles\\x"',
  "$script:x = 1",
  "$global:count += 1",
  '"$($x): y"',
  '"$($x.Name): $($x.Value)"',
  '"$x::y"',
  "[Math]::Max(1, 2)",
  "$type::Parse('1')",
  'Write-Output "`$x: y"',
  "Write-Output '$x: y'",
  "# $x: in a comment\nWrite-Output 1",
  "<# $x: in a block comment #>\nWrite-Output 1",
  "$x = @'\n$x: literal\n'@",
  '$x = @"\n${x}: expanded\n"@',
  "$a.b = 1",
  "$a[0] += 1",
  "[int]$a = 1",
  "[string[]]$a = @()",
  "$a, $b = 1, 2",
  "($a) = 1",
  "$a.b.c[1] = 2",
  "@{ a = 1; b = 2 }",
  "@{ a = 1; 'a b' = 2; \"$k\" = 3 }",
  "Get-Item x 2>&1",
  "Get-Item x *>&1",
  "Get-Item x > out.txt",
  "Get-Item x 2> $null",
  "Get-Item | Where-Object { $_ }",
  "Get-Item |\n  Select-Object -First 1",
  "$a = 1 +\n  2",
  "Get-Item `\n  -Path x",
  "Get-Item -Path:$true",
  "Get-Item -Path 'x' -Force",
  "& $command @arguments",
  "& (Join-Path $root 'x.ps1'); exit $LASTEXITCODE",
  ". $script",
  '$x = "a ""q"" b"',
  "$x = 'it''s'",
  "Write-Output a#b",
  "$x = $env:Path -split ';'",
  "$x = 'a','b' -join ','",
  "try { 1 } catch { 2 }",
  "try { 1 } finally { 2 }",
  "function f($a, $b) { }",
  "function f {\n  param([string]$Name, [int]$Count)\n}",
  "if ($x -and $y) { } elseif (-not $z) { } else { }",
  "$x = if ($a) { 1 } else { 2 }",
  "foreach ($i in 1..3) { $i }",
  "$h = [ordered]@{\n  a = 1\n  b = @{ a = 2 }\n}",
  "Write-Output ([string]::Format('{0}: {1}', $a, $b))",
  'Write-Output "$a`: $b"',
  "Write-Output ('x' + $a + ': y')",
  "$sb = { param($x) $x }",
  "$a = $b | ForEach-Object { $_ * 2 }",
];

const BLOB = {
  kind: "url",
  url: "https://sa.blob.core.windows.net/winfleet/content.tgz",
  sha256: "c".repeat(64),
  auth: "none",
} as const;
const CONTENT_SOURCES: readonly ContentSource[] = [
  BLOB,
  { ...BLOB, auth: "managedIdentity" },
  { ...BLOB, auth: "sas" },
  { kind: "file", path: "C:\\ProgramData\\winfleet\\upload\\content.tgz", sha256: "d".repeat(64) },
];

function files(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? files(full, pattern) : pattern.test(name) ? [full] : [];
  });
}

describe("PowerShell parse rules: what PowerShell's parser rejects", () => {
  for (const [id, source] of REJECTED) {
    it(`${id}: ${JSON.stringify(source)}`, async () => {
      const errors = await powerShellSyntaxErrors(source);
      assert.ok(
        errors.some((e) => e.includes(`: ${id}: `)),
        `expected ${id}, got ${JSON.stringify(errors)}`,
      );
    });
  }

  it("has at least one corpus entry for every rule id", () => {
    const covered = new Set(REJECTED.map(([id]) => id));
    assert.deepEqual(
      POWERSHELL_RULE_IDS.filter((id) => !covered.has(id)),
      [],
    );
  });

  it("names the position and how to fix the drive-qualified reference", async () => {
    assert.deepEqual(await powerShellSyntaxErrors('Write-Output 1\n  throw "at $nssm: x"\n'), [
      "2:13: InvalidVariableReferenceWithDrive: variable reference $nssm: is not valid: ':' is not followed by a variable name character (write ${nssm}: to end the name before the colon)",
    ]);
  });
});

describe("PowerShell parse rules: what PowerShell's parser accepts", () => {
  for (const source of ACCEPTED) {
    it(JSON.stringify(source), async () => {
      assert.deepEqual(await powerShellSyntaxErrors(source), []);
    });
  }
});

describe("PowerShell parse rules over what ships", () => {
  it("pass every .ps1/.psm1/.psd1 in content/ and the Windows CI's own scripts", async () => {
    const failures: string[] = [];
    const scripts = [
      ...files(CONTENT, /\.(ps1|psm1|psd1)$/i),
      ...files(join(__dirname, "..", "windows"), /\.(ps1|psm1|psd1)$/i),
    ];
    assert.ok(scripts.length > 20);
    for (const f of scripts)
      for (const e of await powerShellSyntaxErrors(readFileSync(f, "utf8")))
        failures.push(`${relative(CONTENT, f)}:${e}`);
    assert.deepEqual(failures, []);
  });

  it("pass every PowerShell command in the components' metadata", async () => {
    const failures: string[] = [];
    for (const m of files(join(CONTENT, "components"), /^metadata\.json$/)) {
      const meta = JSON.parse(readFileSync(m, "utf8")) as Record<string, unknown>;
      if (meta.shell === "sh") continue;
      for (const section of ["install", "uninstall", "pre_upgrade", "post_upgrade"]) {
        const s = (meta[section] ?? {}) as Record<string, unknown>;
        for (const role of ["lprecmds", "commands", "lpstcmds"]) {
          const commands = Array.isArray(s[role]) ? (s[role] as string[]) : [];
          for (const c of commands)
            for (const e of await powerShellSyntaxErrors(c))
              failures.push(`${relative(CONTENT, m)} ${section}.${role}: ${e}`);
        }
      }
    }
    assert.deepEqual(failures, []);
  });

  it("pass every rendered bootstrap (each content source, each secret set)", async () => {
    const base: BootstrapArgs = {
      node: DEFAULT_NODE_RUNTIME,
      agent: {
        url: "https://sa.blob.core.windows.net/winfleet/agent-0.2.0.tgz",
        sha256: "a".repeat(64),
        version: "0.2.0",
      },
      content: BLOB,
      agentConfig: {
        template: "win2022",
        templateVersion: "1.0.0",
        variables: { KUBE_API_SERVER: "https://10.0.0.4:6443", NOTE: "it's $x: `y`" },
      },
      secretVariables: ["KUBE_BOOTSTRAP_TOKEN", "CALICO_KUBECONFIG", "KUBE_PROXY_KUBECONFIG"],
    };
    for (const content of CONTENT_SOURCES) {
      for (const secretVariables of [base.secretVariables, ["RKE2_TOKEN"]]) {
        assert.deepEqual(
          await powerShellSyntaxErrors(renderBootstrap({ ...base, content, secretVariables })),
          [],
          `${content.kind} ${secretVariables.length}`,
        );
        // An Azure pool's: the larger secrets read from a Key Vault secret with the pool's identity.
        const azure = {
          ...base,
          content,
          secretVariables,
          identity:
            "/subscriptions/0/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/winfleet-win-nodes",
          vaultSecret: "https://kv-winfleet.vault.azure.net/secrets/winfleet-dev-win-secrets",
        };
        assert.deepEqual(
          await powerShellSyntaxErrors(renderBootstrap(azure)),
          [],
          `${content.kind} ${secretVariables.length} with a Key Vault secret`,
        );
      }
    }
  });
});
