import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normaliseVariable, scriptFacts } from "./powershell-facts";

describe("scriptFacts", () => {
  it("reads commands with named, positional and switch arguments", async () => {
    const f = await scriptFacts(
      "Set-WinfleetService -Name 'kubelet' -BinaryPath $bin -DependsOn @('containerd') -Force\nJoin-Path $root 'k\\kubelet.exe'\n",
    );
    const [set, join] = f.commands;
    assert.equal(set?.name, "Set-WinfleetService");
    assert.deepEqual(
      set?.args.map((a) => [a.parameter, a.text, a.strings, a.variables]),
      [
        ["name", "'kubelet'", ["kubelet"], []],
        ["binarypath", "$bin", [], ["bin"]],
        ["dependson", "@('containerd')", ["containerd"], []],
        ["force", "", [], []],
      ],
    );
    assert.deepEqual(
      join?.args.map((a) => [a.parameter, a.strings]),
      [
        [undefined, []],
        [undefined, ["k\\kubelet.exe"]],
      ],
    );
    assert.equal(join?.line, 2);
  });

  it("tells what happens to a command's output", async () => {
    const f = await scriptFacts(
      [
        "Get-Thing",
        "$x = Get-Thing",
        "$null = Get-Thing",
        "Get-Thing | Out-Null",
        "Get-Thing | Sort-Object",
        "[void](Get-Thing)",
        "if (Get-Thing) { }",
        "$y = @(Get-Thing)",
      ].join("\n"),
    );
    const uses = f.commands.filter((c) => c.name === "Get-Thing").map((c) => c.use);
    assert.deepEqual(uses, [
      "statement",
      "assigned",
      "discarded",
      "discarded",
      "piped",
      "discarded",
      "nested",
      "nested",
    ]);
  });

  it("reads operator invocations: literal, expression and variable targets", async () => {
    const f = await scriptFacts(
      "& 'C:\\k\\a.exe' x\n& (Join-Path $root 'k\\b.ps1') -Action install\n$tool = Join-Path $root 'c.exe'\n& $tool @args\n. .\\lib.ps1\n",
    );
    assert.deepEqual(
      f.commands.filter((c) => c.operator).map((c) => [c.operator, c.targetKind, c.name, c.targetStrings]),
      [
        ["&", "string", "C:\\k\\a.exe", ["C:\\k\\a.exe"]],
        ["&", "expression", "(Join-Path $root 'k\\b.ps1')", ["k\\b.ps1"]],
        ["&", "variable", "$tool", []],
        [".", "name", ".\\lib.ps1", []],
      ],
    );
  });

  it("reads assignments, foreach loops, functions and the statement after a call", async () => {
    const f = await scriptFacts(
      "function Get-It {\n    param(\n        [string]$Name,\n        $Other\n    )\n    return $Name\n}\nforeach ($n in @('A', 'B')) { Get-It -Name $n }\n$h.key = $env:SECRET\nsc.exe stop x\nexit $LASTEXITCODE\n",
    );
    assert.deepEqual(
      f.functions.map((x) => [x.name, x.parameters, x.returnsValue]),
      [["Get-It", ["name", "other"], true]],
    );
    assert.deepEqual(
      f.assignments.map((a) => [a.variable, a.strings, a.variables]),
      [
        ["h", [], ["env:secret"]],
        ["n", ["A", "B"], []],
      ],
    );
    const sc = f.commands.find((c) => c.name === "sc.exe");
    assert.equal(sc?.nextStatementText, "exit $LASTEXITCODE");
    assert.equal(f.lastStatement, "exit $LASTEXITCODE");
    assert.deepEqual(f.envReads, ["SECRET"]);
    assert.equal(f.commands.find((c) => c.name === "Get-It")?.inFunction, undefined);
  });

  it("records throws, output statements, method calls, types and exit codes", async () => {
    const f = await scriptFacts(
      'function Test-It {\n    throw "bad $token"\n}\n$token\n[System.IO.File]::WriteAllText($p, $token)\n$c = New-Object System.Net.WebClient\n[Net.WebClient]::new()\nif ($x) { exit 3010 }\nexit 0\n',
    );
    assert.deepEqual(
      f.emissions.map((e) => [e.kind, e.variables, e.inFunction]),
      [
        ["throw", ["token"], "Test-It"],
        ["output", ["token"], undefined],
        ["method", ["p", "token"], undefined],
        ["method", [], undefined],
      ],
    );
    assert.deepEqual(f.types.map((t) => t.name).sort(), ["net.webclient", "system.io.file", "system.net.webclient"]);
    assert.deepEqual(f.exits, [3010, 0]);
  });

  it("reports syntax errors", async () => {
    assert.notDeepEqual((await scriptFacts("if ($x) {\n")).syntaxErrors, []);
    assert.deepEqual((await scriptFacts("Write-Host 'fine'\n")).syntaxErrors, []);
  });
});

describe("normaliseVariable", () => {
  it("strips sigils, scopes and braces and lower-cases", () => {
    assert.equal(normaliseVariable("$env:KUBE_X"), "env:kube_x");
    assert.equal(normaliseVariable("$script:Foo"), "foo");
    assert.equal(normaliseVariable("$global:LASTEXITCODE"), "lastexitcode");
    assert.equal(normaliseVariable("${Bar}"), "bar");
    assert.equal(normaliseVariable("@arguments"), "arguments");
  });
});
