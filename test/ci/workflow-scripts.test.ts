/**
 * The scripts the workflows run, run here: which stacks are ready (scripts/ready-stacks.mjs, on
 * stack files of its own), the environment check (scripts/environment-credentials.sh) and the wait
 * for a rollout (scripts/rollout-status.sh). The rollout wait drives the Pulumi CLI and kubectl
 * against a deployed stack and a cluster; here they are small scripts on PATH that answer as those
 * tools do (a stack output as JSON; `kubectl rollout status` exiting 1 when its timeout runs out),
 * so what is checked is the script's own logic, not the tools. All pass shellcheck.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { SHELLCHECK, scratchDir, skipUnlessInstalled } from "../support";

const REPO = join(__dirname, "..", "..");
const scratch = scratchDir("winfleet-workflow-scripts-");
const noShellcheck = skipUnlessInstalled(SHELLCHECK);

function shellcheck(file: string): string {
  const r = spawnSync(SHELLCHECK.command, ["-s", "bash", "-f", "gcc", file], { encoding: "utf8" });
  return `${r.stdout}${r.stderr}`.trim();
}

describe("scripts/ready-stacks.mjs", () => {
  const script = join(REPO, "scripts", "ready-stacks.mjs");
  const cloud = "config:\n  winfleet:fleet:\n    pools:\n      - name: p\n        kind: azure\n";
  function run(stacks: Record<string, string>, args: string[] = []) {
    const dir = mkdtempSync(join(scratch, "stacks-"));
    mkdirSync(join(dir, "stacks"));
    for (const [name, text] of Object.entries(stacks)) writeFileSync(join(dir, "stacks", `Pulumi.${name}.yaml`), text);
    const out = join(dir, "github-output");
    writeFileSync(out, "");
    const r = spawnSync(process.execPath, [script, ...args], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, GITHUB_OUTPUT: out, STACKS_DIR: "" },
    });
    return { code: r.status, stdout: r.stdout, output: readFileSync(out, "utf8") };
  }

  it("lists every stack file without a REPLACE marker that deploys something, a team's own names included, and says which it left out", () => {
    const header = "# Copy this file, replace every value under a REPLACE comment and delete the comment\n";
    const r = run({
      dev: `${header}# REPLACE: the API server\n${cloud}`,
      "team-prod": `${header}${cloud}`,
      lab: cloud.replace("azure", "byo"),
      local: "config:\n  winfleet:fleet:\n    pools:\n      - name: local\n        kind: local\n",
    });
    assert.equal(r.code, 0, r.stdout);
    assert.equal(r.output, 'stacks=["lab","team-prod"]\n');
    assert.match(r.stdout, /^::notice file=stacks\/Pulumi\.dev\.yaml::stack dev still has REPLACE markers/m);
    assert.match(r.stdout, /^::notice file=stacks\/Pulumi\.local\.yaml::stack local deploys nothing from CI/m);
    assert.doesNotMatch(r.stdout, /team-prod|lab/);
  });

  it("gives an empty list for the shipped samples, which all hold placeholders or run locally", () => {
    const shipped = spawnSync(process.execPath, [script], {
      cwd: REPO,
      encoding: "utf8",
      env: { ...process.env, GITHUB_OUTPUT: "" },
    });
    assert.equal(shipped.status, 0);
    assert.match(shipped.stdout, /^stacks=\[\]$/m);
    for (const s of ["dev", "rke2", "byoh", "local"]) assert.match(shipped.stdout, new RegExp(`stack ${s} `));
  });

  it("takes names too, and fails on one that is not a stack's, or on a file that is not YAML, naming it", () => {
    assert.equal(run({ a: cloud, b: cloud }, ["b"]).output, 'stacks=["b"]\n');
    const absent = run({}, ["nope"]);
    assert.equal(absent.code, 2);
    assert.match(absent.stdout, /::error file=stacks\/Pulumi\.nope\.yaml::no such stack file/);
    const bad = run({}, ["../x"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stdout, /'\.\.\/x' is not a stack name/);
    const broken = run({ typo: "config:\n  winfleet:fleet: [\n" });
    assert.equal(broken.code, 2);
    assert.match(broken.stdout, /::error file=stacks\/Pulumi\.typo\.yaml::not valid YAML/);
    assert.equal(broken.output, "", "nothing half-written");
  });
});

describe("scripts/environment-credentials.sh", () => {
  const script = join(REPO, "scripts", "environment-credentials.sh");
  const run = (env: Record<string, string>) =>
    spawnSync("bash", [script, "dev-preview"], {
      encoding: "utf8",
      env: { PATH: process.env.PATH ?? "", ...env },
    });

  it("passes shellcheck", { skip: noShellcheck }, () => {
    assert.equal(shellcheck(script), "");
  });

  it("names every secret and variable the environment lacks, and writes nothing", () => {
    const kubeconfig = join(scratch, "missing.kubeconfig");
    const r = run({ KUBECONFIG: kubeconfig, PULUMI_ORG: "acme" });
    assert.equal(r.status, 1);
    assert.deepEqual(r.stdout.trim().split("\n"), [
      "::error::the environment dev-preview has no secret KUBECONFIG (the kubeconfig this environment reaches its cluster with)",
      "::error::the environment dev-preview has no variable PULUMI_TEAM (the Pulumi Cloud team whose token this environment's jobs get)",
    ]);
    assert.throws(() => statSync(kubeconfig));
  });

  it("writes the kubeconfig, readable by its owner alone", () => {
    const kubeconfig = join(scratch, "ok.kubeconfig");
    const r = run({ KUBECONFIG: kubeconfig, KUBECONFIG_DATA: "apiVersion: v1\n", PULUMI_ORG: "a", PULUMI_TEAM: "t" });
    assert.equal(r.status, 0, r.stdout);
    assert.equal(readFileSync(kubeconfig, "utf8"), "apiVersion: v1\n");
    assert.equal(statSync(kubeconfig).mode & 0o777, 0o600);
  });
});

describe("scripts/rollout-status.sh", () => {
  const script = join(REPO, "scripts", "rollout-status.sh");
  /** Runs the script with `pulumi` answering `upgraders` and `kubectl` finishing the rollouts it is told to. */
  function run(upgraders: unknown, finished: string[]) {
    const bin = mkdtempSync(join(scratch, "bin-"));
    const calls = join(bin, "calls");
    const tool = (name: string, body: string): void => {
      writeFileSync(join(bin, name), `#!/usr/bin/env bash\necho "${name} $*" >> '${calls}'\n${body}\n`);
      chmodSync(join(bin, name), 0o755);
    };
    tool("pulumi", `printf '%s' '${JSON.stringify(upgraders)}'`);
    tool(
      "kubectl",
      `case " ${finished.join(" ")} " in *" \${3#daemonset/} "*) echo "daemon set \\"\${3#daemonset/}\\" successfully rolled out";; *) echo 'error: timed out waiting for the condition' >&2; exit 1;; esac`,
    );
    const r = spawnSync("bash", [script], {
      encoding: "utf8",
      env: { PATH: `${bin}:${process.env.PATH ?? ""}`, STACK: "acme/winfleet/dev", ROLLOUT_TIMEOUT: "5m" },
    });
    let log = "";
    try {
      log = readFileSync(calls, "utf8");
    } catch {
      // no tool was called
    }
    return { code: r.status, out: `${r.stdout}${r.stderr}`, calls: log.trim().split("\n") };
  }

  it("passes shellcheck", { skip: noShellcheck }, () => {
    assert.equal(shellcheck(script), "");
  });

  it("waits for each upgrader of the stack and succeeds when every rollout finishes", () => {
    const r = run({ namespace: "winfleet-system", daemonSets: ["up-a", "up-b"] }, ["up-a", "up-b"]);
    assert.equal(r.code, 0, r.out);
    assert.deepEqual(r.calls, [
      "pulumi stack output upgraders --json --stack acme/winfleet/dev",
      "kubectl rollout status daemonset/up-a --namespace winfleet-system --timeout 5m",
      "kubectl rollout status daemonset/up-b --namespace winfleet-system --timeout 5m",
    ]);
  });

  it("fails, naming the DaemonSet, when a rollout halts, and still waits for the others", () => {
    const r = run({ namespace: "ns", daemonSets: ["up-a", "up-b"] }, ["up-b"]);
    assert.equal(r.code, 1);
    assert.match(r.out, /::error::the rollout of daemonset\/up-a in ns did not finish within 5m/);
    assert.equal(r.calls.length, 3, "up-b is waited for too");
  });

  it("has nothing to wait for in a stack without an upgrader", () => {
    const r = run({ namespace: "ns", daemonSets: [] }, []);
    assert.equal(r.code, 0);
    assert.match(r.out, /has no upgrader/);
    assert.equal(r.calls.length, 1);
  });
});
