/**
 * `winfleet-agent diagnose` through the real CLI on real hosts: a sandbox host
 * converged through the lifecycle engine, a failed apply, and secrets that
 * must not appear in any byte of the archive.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { entryJson, unpack, writeAgentConfig } from "./support";
import { agent, applyUntilSettled, tempDir, writeContent } from "../support";

const CONTENT = join(__dirname, "..", "..", "content");
const dirs: string[] = [];
const fresh = (prefix: string): string => {
  const d = tempDir(prefix);
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("diagnose on a converged sandbox host", () => {
  let dir: string;
  let config: string;
  before(async () => {
    dir = fresh("diagnose-converged-");
    config = writeAgentConfig(
      join(dir, "etc"),
      {
        nodeName: "node-d",
        root: join(dir, "root"),
        content: CONTENT,
        template: "sandbox",
        templateVersion: "1.0.0",
        broker: {
          listen: join(dir, "run", "wins.sock"),
          proxy: join(dir, "run", "proxy.sock"),
          stateDir: join(dir, "broker"),
        },
      },
      '{"level":"info","msg":"agent started"}\n',
    );
    const r = await applyUntilSettled(["--config", config]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.reboots > 0, "the sandbox asks for a reboot on install");
  });

  it("writes one archive whose manifest lists every entry, its source and size, and what is missing and why", async () => {
    const out = join(dir, "d.tar.gz");
    const r = await agent(["diagnose", "--config", config, "--out", out]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^wrote .*d\.tar\.gz: \d+ entries/);
    const u = unpack(out);
    const listed = u.manifest.entries.map((e) => e.path).sort();
    assert.deepEqual(
      listed,
      [...u.files.keys()].filter((p) => p !== "manifest.json").sort(),
      "the manifest lists exactly what the archive holds",
    );
    for (const e of u.manifest.entries) {
      const data = u.files.get(e.path) ?? Buffer.alloc(0);
      assert.equal(e.size, data.length, `${e.path} size`);
      assert.equal(e.sha256, createHash("sha256").update(data).digest("hex"), `${e.path} digest`);
      assert.ok(e.source && e.collector, `${e.path} names its source`);
    }
    for (const p of [
      "agent/status.json",
      "agent/journal.json",
      "agent/config.json",
      "agent/agent.log",
      "agent/verify.json",
      "agent/report-queue.json",
      "versions.json",
      "broker/config.json",
      "broker/processes.json",
      "system/ps.txt",
      "system/uname.txt",
    ]) {
      assert.ok(u.files.has(p), `${p} is archived`);
    }
    assert.ok(
      [...u.files.keys()].some((p) => /^agent\/runs\/[^/]+\/\d{3}-sandbox-feature\.log$/.test(p)),
      "each component's step log is archived",
    );

    const status = entryJson<{ state: string; template: { name: string; version: string }; agentVersion: string }>(
      u,
      "agent/status.json",
    );
    assert.equal(status.state, "converged");
    assert.deepEqual(status.template, { name: "sandbox", version: "1.0.0" });
    const versions = entryJson<{ agent: string; node: string; components: { name: string; version: string }[] }>(
      u,
      "versions.json",
    );
    assert.equal(versions.node, process.version);
    assert.deepEqual(versions.components.map((c) => `${c.name}@${c.version}`).sort(), [
      "sandbox-config@1.0.0",
      "sandbox-feature@1.0.0",
      "sandbox-legacy@1.0.0",
      "sandbox-service@1.0.0",
      "sandbox-state@1.0.0",
    ]);
    assert.deepEqual(entryJson<{ drift: boolean }>(u, "agent/verify.json").drift, false);
    assert.equal(entryJson<{ config: { nodeName: string } }>(u, "agent/config.json").config.nodeName, "node-d");
    assert.equal(u.files.get("agent/agent.log")?.toString(), '{"level":"info","msg":"agent started"}\n');
    const procs = entryJson<{ from: string; processes: unknown[] }>(u, "broker/processes.json");
    assert.equal(procs.from, "records", "no broker runs: its records are read");
    assert.deepEqual(procs.processes, []);

    // A content source tree (not a built bundle) has no manifest: recorded as missing, with why.
    const noManifest = u.manifest.missing.find((m) => m.path === "content/manifest.json");
    assert.match(noManifest?.reason ?? "", /not a built bundle/);
    assert.equal(entryJson<{ status: string }>(u, "content/signature.json").status, "unsigned");
    assert.ok(
      u.manifest.collectors.every((c) => c.outcome === "ok"),
      JSON.stringify(u.manifest.collectors),
    );
  });

  it("--summary on a healthy host says so first and exits 0", async () => {
    const r = await agent(["diagnose", "--config", config, "--summary"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout.split("\n")[0], "OK: nothing wrong found");
    assert.match(r.stdout, /agent .*: converged, sandbox 1\.0\.0, 5 components/);
    assert.match(r.stdout, /no drift/);
  });

  it("--summary puts drift first once an applied file changed", async () => {
    const conf = join(dir, "root", "winfleet/sandbox/bin/write-config.sh");
    assert.ok(existsSync(conf));
    rmSync(conf);
    const r = await agent(["diagnose", "--config", config, "--summary"]);
    assert.equal(r.code, 1);
    assert.match(r.stdout.split("\n")[0] ?? "", /^DRIFT: 1 of \d+ applied paths differ \(sandbox-config\)/);
    assert.match(r.stdout, /missing\s+\/winfleet\/sandbox\/bin\/write-config\.sh/);
  });

  it("refuses a bad --since (exit 2) and an --out it cannot write (exit 1), naming each, with no archive", async () => {
    const out = join(dir, "never.tar.gz");
    const r = await agent(["diagnose", "--config", config, "--since", "3 weeks", "--out", out]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--since 3 weeks: expected a duration such as/);
    assert.equal(existsSync(out), false);
    const nowhere = await agent(["diagnose", "--config", config, "--out", join(dir, "no", "such", "dir", "d.tar.gz")]);
    assert.equal(nowhere.code, 1);
    assert.match(nowhere.stderr, /--out .*d\.tar\.gz: cannot write the archive there \(ENOENT\); nothing was written/);
  });
});

describe("diagnose after a failed apply", () => {
  it("archives the failure and the summary's first line names it, with its error tail", async () => {
    const dir = fresh("diagnose-failed-");
    const content = writeContent(
      [
        { name: "fine", version: "1.0.0", metadata: { install: { commands: ["echo fine"] } } },
        {
          name: "broken",
          version: "2.1.0",
          metadata: {
            install: { commands: ["echo 'pulling image' >&2; echo 'HNS network not found: cbr0' >&2; exit 3"] },
          },
        },
      ],
      [{ name: "t", version: "1.0.0", packages: ["fine_1.0.0", "broken_2.1.0"] }],
    );
    const config = writeAgentConfig(dir, { nodeName: "node-f", root: join(dir, "root"), content, template: "t" });
    const applied = await agent(["apply", "--config", config]);
    assert.equal(applied.code, 1, applied.stderr);
    const out = join(dir, "failed.tar.gz");
    const r = await agent(["diagnose", "--config", config, "--summary", "--out", out]);
    assert.equal(r.code, 1, "a problem found is exit 1");
    const lines = r.stdout.split("\n");
    assert.match(lines[0] ?? "", /^FAILED: broken 2\.1\.0 install: exited 3 — echo 'pulling image'/);
    assert.match(r.stdout, /HNS network not found: cbr0/);
    assert.ok(r.stdout.indexOf("HNS network") < r.stdout.indexOf("fine:"), "what is wrong comes before what is fine");
    const u = unpack(out);
    const status = entryJson<{ state: string; failure: { component: string; exitCode: number } }>(
      u,
      "agent/status.json",
    );
    assert.equal(status.state, "failed");
    assert.deepEqual([status.failure.component, status.failure.exitCode], ["broken", 3]);
    const log = [...u.files].find(([p]) => /^agent\/runs\/.*-broken\.log$/.test(p));
    assert.match(log?.[1].toString() ?? "", /HNS network not found: cbr0/);
    // The failed run's steps are in its plan file, archived beside the journal that names it.
    const journal = entryJson<{ run: { plan: { file: string } } }>(u, "agent/journal.json");
    const plan = entryJson<{ steps: { command?: string }[] }>(u, `agent/${journal.run.plan.file}`);
    assert.ok(plan.steps.some((step) => step.command?.includes("HNS network not found")));
  });
});

describe("secrets", () => {
  it("no secret value — from the config, its variables or the environment — appears in any byte of the archive", async () => {
    const dir = fresh("diagnose-secrets-");
    const unique = (tag: string): string =>
      `${tag}-${createHash("sha256").update(`${tag}${process.pid}${Date.now()}`).digest("hex").slice(0, 24)}`;
    const s = { token: unique("tok"), password: unique("pw"), declared: unique("var"), env: unique("env") };
    const content = writeContent(
      [
        {
          name: "joiner",
          version: "1.0.0",
          metadata: {
            variables: {
              JOIN_TOKEN: { description: "join token", secret: true },
              REGISTRY_PASSWORD: { description: "pull secret", secret: true },
            },
            install: {
              commands: [
                'echo "token=$JOIN_TOKEN password=$REGISTRY_PASSWORD pw=$DB_PASSWORD"; echo "stderr $JOIN_TOKEN" >&2; exit 4',
              ],
            },
          },
        },
      ],
      [{ name: "t", version: "1.0.0", packages: ["joiner_1.0.0"] }],
    );
    const config = writeAgentConfig(
      dir,
      {
        nodeName: "node-s",
        root: join(dir, "root"),
        content,
        template: "t",
        secrets: { JOIN_TOKEN: s.token, DB_PASSWORD: s.password },
        variables: { REGISTRY_PASSWORD: s.declared, PLAIN: "shown-value" },
      },
      `{"msg":"a careless line","token":"${s.token}","pw":"${s.declared}"}\n`,
    );
    const env = { REGISTRY_PASSWORD: s.env };
    const applied = await agent(["apply", "--config", config], { env });
    assert.equal(applied.code, 1);
    const out = join(dir, "s.tar.gz");
    const r = await agent(["diagnose", "--config", config, "--out", out], { env });
    assert.equal(r.code, 0, r.stderr);
    const u = unpack(out);
    for (const [what, value] of Object.entries(s)) {
      for (const encoding of ["utf8", "utf16le", "base64"] as const) {
        const needle =
          encoding === "base64" ? Buffer.from(Buffer.from(value).toString("base64")) : Buffer.from(value, encoding);
        assert.equal(u.tar.indexOf(needle), -1, `the ${what} secret appears (${encoding}) in the archive`);
      }
    }
    const shown = entryJson<{ config: { secrets: Record<string, string>; variables: Record<string, string> } }>(
      u,
      "agent/config.json",
    ).config;
    assert.deepEqual(
      shown.secrets,
      { JOIN_TOKEN: "[secret]", DB_PASSWORD: "[secret]" },
      "secret names stay, values go",
    );
    assert.equal(shown.variables.PLAIN, "shown-value", "what is not secret is shown");
    assert.equal(shown.variables.REGISTRY_PASSWORD, "[secret]", "a variable a component declares secret is hidden too");
  });
});
