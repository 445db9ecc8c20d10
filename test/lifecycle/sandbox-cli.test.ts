/**
 * The sandbox content through the real CLI: install (with its reboot), upgrade
 * in place and through uninstall, a dropped component, verify and drift,
 * status, plan that writes nothing, and uninstall.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, readFileSync, readdirSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { agent, applyUntilSettled, hostTree, REBOOT_STATUS, tempDir } from "../support";

const CONTENT = join(__dirname, "..", "..", "content");

describe("the sandbox through winfleet-agent", () => {
  let root: string;
  const base = (): string[] => ["--content", CONTENT, "--root", root, "--node-name", "node-a"];
  before(() => {
    root = tempDir("sandbox-root-");
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("plans without writing anything", async () => {
    const r = await agent(["plan", ...base(), "--template", "sandbox@1.0.0", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const plan = JSON.parse(r.stdout) as { template: { version: string }; steps: { phase: string; kind: string }[] };
    assert.equal(plan.template.version, "1.0.0");
    assert.deepEqual([...new Set(plan.steps.map((s) => s.phase))], ["files", "install"]);
    assert.equal(plan.steps.filter((s) => s.kind === "reboot").length, 1);
    assert.deepEqual(readdirSync(root), [], "plan wrote to the root");
  });

  it("installs 1.0.0: stops for its reboot with exit 3010, then continues where it was", async () => {
    const first = await agent(["apply", ...base(), "--template", "sandbox@1.0.0"]);
    assert.equal(first.code, REBOOT_STATUS, first.stderr);
    const pending = JSON.parse((await agent(["status", "--root", root, "--json"])).stdout) as {
      state: string;
      reboot: { reasons: string[] };
    };
    assert.equal(pending.state, "reboot-pending");
    assert.match(pending.reboot.reasons.join(), /sandbox-feature 1\.0\.0 install asks for a reboot/);
    assert.equal(existsSync(join(root, "winfleet/sandbox/services/heartbeat.service")), false, "ran past the reboot");

    const second = await agent(["apply", ...base(), "--template", "sandbox@1.0.0"]);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(
      readFileSync(join(root, "winfleet/sandbox/etc/node.conf"), "utf8"),
      "node: node-a\ngreeting: hello from winfleet\nwritten-by: sandbox-config 1.0.0\n",
    );
    assert.equal(
      existsSync(join(root, "winfleet/sandbox/var/feature.active")),
      true,
      "the step after the reboot did not run",
    );
    assert.equal(
      readFileSync(join(root, "winfleet/sandbox/var/history.log"), "utf8"),
      "install sandbox-state 1.0.0\ninstall sandbox-legacy 1.0.0\n",
    );
  });

  it("applies the same template again as a no-op", async () => {
    const before = hostTree(root);
    const r = await agent(["apply", ...base(), "--template", "sandbox@1.0.0", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /step-started/);
    assert.deepEqual(hostTree(root), before);
  });

  it("upgrades to 1.1.0: in place, through uninstall, and drops sandbox-legacy", async () => {
    const r = await applyUntilSettled([...base(), "--template", "sandbox", "--template-version", "1.1.0"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.reboots, 0);
    assert.equal(
      existsSync(join(root, "winfleet/sandbox/etc/node.conf")),
      false,
      "format 1 config survived the upgrade through uninstall",
    );
    assert.equal(
      readFileSync(join(root, "winfleet/sandbox/etc/node.env"), "utf8"),
      "FORMAT=2\nNODE=node-a\nGREETING=hello from winfleet\n",
    );
    assert.equal(
      existsSync(join(root, "winfleet/sandbox/legacy/README")),
      false,
      "the dropped component's file is still there",
    );
    assert.match(readFileSync(join(root, "winfleet/sandbox/var/state"), "utf8"), /^schema=2\nevent=post_upgrade\n/);
    assert.equal(
      readFileSync(join(root, "winfleet/sandbox/var/history.log"), "utf8"),
      [
        "install sandbox-state 1.0.0",
        "install sandbox-legacy 1.0.0",
        "uninstall sandbox-legacy 1.0.0",
        "pre_upgrade sandbox-state 2.0.0",
        "post_upgrade sandbox-state 2.0.0",
        "",
      ].join("\n"),
    );
    const status = JSON.parse((await agent(["status", "--root", root, "--json"])).stdout) as {
      state: string;
      template: { version: string };
      components: { name: string; version: string; state: string }[];
    };
    assert.equal(status.state, "converged");
    assert.equal(status.template.version, "1.1.0");
    assert.deepEqual(
      status.components.map((c) => `${c.name} ${c.version} ${c.state}`),
      [
        "sandbox-config 2.0.0 installed",
        "sandbox-state 2.0.0 installed",
        "sandbox-feature 1.0.0 installed",
        "sandbox-service 1.0.0 installed",
      ],
    );
  });

  it("verifies clean, then finds edited, re-moded and deleted files (exit 1)", async () => {
    const clean = await agent(["verify", "--root", root]);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    writeFileSync(join(root, "winfleet/sandbox/bin/record-state.sh"), "#!/bin/sh\necho edited\n");
    chmodSync(join(root, "winfleet/sandbox/bin/write-config.sh"), 0o600);
    unlinkSync(join(root, "winfleet/sandbox/bin/enable-feature.sh"));
    const drift = await agent(["verify", "--root", root, "--json"]);
    assert.equal(drift.code, 1);
    const report = JSON.parse(drift.stdout) as {
      drift: boolean;
      items: { path: string; problem: string; component: string }[];
    };
    assert.deepEqual(report.items.map((i) => `${i.component} ${i.problem} ${i.path}`).sort(), [
      "sandbox-config mode /winfleet/sandbox/bin/write-config.sh",
      "sandbox-feature missing /winfleet/sandbox/bin/enable-feature.sh",
      "sandbox-state content /winfleet/sandbox/bin/record-state.sh",
    ]);
  });

  it("uninstalls every component and removes their files", async () => {
    const r = await agent(["uninstall", "--root", root]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const left = Object.keys(hostTree(root)).filter(
      (p) => !p.endsWith("history.log") && !(hostTree(root)[p] ?? "").startsWith("dir"),
    );
    assert.deepEqual(left, [], "files left behind");
    const status = JSON.parse((await agent(["status", "--root", root, "--json"])).stdout) as {
      state: string;
      components: unknown[];
    };
    assert.equal(status.state, "uninstalled");
    assert.deepEqual(status.components, []);
  });
});
