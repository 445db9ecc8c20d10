/**
 * Self-upgrade with real processes: the agent runs from an installation under a
 * pid-file supervisor; `up` switches it to a new bundle and the new version
 * answers; a bundle that never answers is rolled back and the previous version
 * answers again. Service definitions are checked as data, and the systemd unit
 * by systemd itself.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { cpSync, mkdirSync, readFileSync, readdirSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { appInfo } from "../../agent/broker/client";
import { silentLogger } from "../../agent/common/log";
import { signBundle, verifyBundle } from "../../agent/release/signing";
import { installationAt } from "../../agent/upgrade/installation";
import { pidFileManager } from "../../agent/upgrade/service-manager";
import {
  WINDOWS_FAILURE_ACTIONS,
  renderSystemdUnit,
  renderWindowsServiceInstall,
} from "../../agent/upgrade/service-units";
import { up } from "../../agent/upgrade/up";
import { AGENT } from "./harness";
import { alive, exitOf, pollUntil, skipUnlessInstalled, tempDir, type Tool } from "../support";

const repo = join(__dirname, "..", "..");
// The versions below are copies of this checkout's sources, not built bundles: run them as sources
// even when the suite runs the agent from its bundle (WINFLEET_LAUNCH=bundle).
process.env.WINFLEET_LAUNCH = "source";

/** An agent bundle of this checkout at `version` (node_modules shared by link). */
function bundle(root: string, version: string, broken = false): string {
  const dir = join(root, `bundle-${version}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "winfleet", version }));
  cpSync(join(repo, "bin"), join(dir, "bin"), { recursive: true });
  cpSync(join(repo, "agent"), join(dir, "agent"), { recursive: true });
  symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"));
  if (broken) writeFileSync(join(dir, "bin", "winfleet-agent.js"), "process.exit(1);\n");
  return dir;
}

describe("winfleet-agent up", () => {
  const root = tempDir("up-");
  const installDir = join(root, "install");
  const config = join(root, "broker.yaml");
  const socket = join(root, "run", "wins.sock");
  writeFileSync(
    config,
    `listen: ${socket}\nproxy: ${join(root, "run", "proxy.sock")}\nstateDir: ${join(root, "state")}\nallowAll: true\n`,
  );
  const manager = pidFileManager(installDir, ["broker", "--config", config]);
  after(() => manager.stop());
  const options = {
    installation: installationAt(installDir),
    manager,
    probe: async () => (await appInfo(socket)).Info?.Version,
    timeoutMs: 20_000,
    log: silentLogger,
  };

  it("installs, switches and verifies each new version", async () => {
    assert.deepEqual(await up(bundle(root, "1.0.0-test"), options), {
      from: undefined,
      to: "1.0.0-test",
      outcome: "upgraded",
    });
    assert.equal(await options.probe(), "1.0.0-test");
    assert.deepEqual(await up(bundle(root, "2.0.0-test"), options), {
      from: "1.0.0-test",
      to: "2.0.0-test",
      outcome: "upgraded",
    });
    assert.equal(await options.probe(), "2.0.0-test");
    assert.equal((await up(join(root, "bundle-2.0.0-test"), options)).outcome, "unchanged");
  });

  it("rolls back to the previous version when the new one does not answer", async () => {
    await assert.rejects(
      up(bundle(root, "3.0.0-broken", true), { ...options, timeoutMs: 3000 }),
      /3\.0\.0-broken did not answer.*rolled back to 2\.0\.0-test, which answers/,
    );
    assert.equal(await options.probe(), "2.0.0-test");
    assert.equal(readlinkSync(join(installDir, "current")), join("releases", "2.0.0-test"));
  });

  // What a writer racing the upgrade would do once the bundle has passed its check: change the code,
  // or the version, to switch the host to an older release already installed without a copy.
  const swaps: [string, string, string, RegExp][] = [
    [
      "code",
      "bin/winfleet-agent.js",
      "// swapped\n",
      /was tampered with: bin\/winfleet-agent\.js differs from what was signed/,
    ],
    [
      "version (to an older release)",
      "package.json",
      JSON.stringify({ name: "winfleet", version: "1.0.0-test" }),
      /was tampered with: package\.json differs from what was signed/,
    ],
  ];
  for (const [what, file, swapped, message] of swaps) {
    it(`installs only what it verified: a bundle whose ${what} changed after its check is refused as copied`, async () => {
      const { privateKey, publicKey } = generateKeyPairSync("ed25519");
      const dir = join(root, `bundle-6.0.0-swapped-${file.replace(/\W/g, "")}`);
      mkdirSync(join(dir, "bin"), { recursive: true });
      writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "winfleet", version: "6.0.0-swapped" }));
      writeFileSync(join(dir, "bin", "winfleet-agent.js"), "// signed\n");
      await signBundle(dir, privateKey.export({ type: "pkcs8", format: "pem" }).toString());
      const pem = publicKey.export({ type: "spki", format: "pem" }).toString();
      const checked: string[] = [];
      const verify = async (d: string): Promise<void> => {
        checked.push(d);
        await verifyBundle(d, pem);
        if (checked.length === 1) writeFileSync(join(dir, ...file.split("/")), swapped);
      };
      await assert.rejects(up(dir, { ...options, verify }), message);
      assert.equal(checked.length, 2, "the staged copy was checked too");
      assert.deepEqual(
        readdirSync(join(installDir, "releases")).filter((e) => e.startsWith(".") || e.startsWith("6.")),
        [],
        "nothing left installed",
      );
      assert.equal(readlinkSync(join(installDir, "current")), join("releases", "2.0.0-test"));
    });
  }

  it("refuses a version that is a path", async () => {
    const dir = join(root, "bundle-dots");
    mkdirSync(join(dir, "bin"), { recursive: true });
    writeFileSync(join(dir, "bin", "winfleet-agent.js"), "");
    for (const version of ["..", ".", ".hidden"]) {
      writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "winfleet", version }));
      await assert.rejects(
        up(dir, options),
        /is not an agent bundle: package\.json must be winfleet's with a version/,
        version,
      );
    }
    assert.equal(readlinkSync(join(installDir, "current")), join("releases", "2.0.0-test"));
  });

  it("the CLI reports an upgrade and its detached form returns at once", async () => {
    const cli = spawn(
      process.execPath,
      [
        AGENT,
        "up",
        "--bundle",
        bundle(root, "4.0.0-test"),
        "--install-dir",
        installDir,
        "--config",
        config,
        "--manager",
        "pidfile",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    cli.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    assert.equal(await exitOf(cli), 0);
    assert.equal(out, "upgraded: 2.0.0-test -> 4.0.0-test\n");
    const detached = spawnSync(
      process.execPath,
      [
        AGENT,
        "up",
        "--detach",
        "--bundle",
        bundle(root, "5.0.0-test"),
        "--install-dir",
        installDir,
        "--config",
        config,
        "--manager",
        "pidfile",
      ],
      { encoding: "utf8" },
    );
    assert.equal(detached.status, 0);
    assert.match(detached.stdout, /upgrade started in the background/);
    const end = Date.now() + 30_000;
    await pollUntil(async () => (await options.probe().catch(() => undefined)) === "5.0.0-test", 30_000, 200);
    assert.equal(await options.probe(), "5.0.0-test");
    // The background upgrade decides on its own probes; until it exits it may still roll back,
    // and one outliving the test would restart a version after the suite stopped it.
    const pid = Number(/pid (\d+)/.exec(detached.stdout)?.[1]);
    await pollUntil(() => !alive(pid), Math.max(0, end - Date.now()), 200);
    assert.equal(alive(pid), false, "the background upgrade finished");
    assert.match(readFileSync(join(installDir, "up.log"), "utf8"), /upgraded: 4\.0\.0-test -> 5\.0\.0-test/);
    assert.equal(await options.probe(), "5.0.0-test");
  });
});

const SYSTEMD_ANALYZE: Tool = {
  name: "systemd-analyze",
  command: "systemd-analyze",
  install: "apt-get install systemd",
};

describe("service definitions", () => {
  const spec = {
    installDir: "/opt/winfleet",
    node: process.execPath,
    args: ["broker", "--config", "/etc/winfleet/broker config.yaml"],
  };

  it("the systemd unit passes systemd-analyze verify", { skip: skipUnlessInstalled(SYSTEMD_ANALYZE) }, () => {
    const dir = tempDir("unit-");
    const unit = join(dir, "winfleet-agent.service");
    writeFileSync(unit, renderSystemdUnit(spec));
    const r = spawnSync("systemd-analyze", ["verify", unit], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      renderSystemdUnit(spec),
      /^ExecStart=\S+ --initial-old-space-size=64 \/opt\/winfleet\/current\/bin\/winfleet-agent\.js broker --config "\/etc\/winfleet\/broker config\.yaml"$/m,
    );
  });

  it("the Windows registration restarts after 5, 10 and 15 s and quotes every value", () => {
    const ps = renderWindowsServiceInstall({
      installDir: "C:\\ProgramData\\winfleet",
      node: "C:\\Program Files\\nodejs\\node.exe",
      args: ["broker", "--config", "C:\\etc\\it's\\config"],
      nssm: "C:\\nssm.exe",
    });
    assert.equal(WINDOWS_FAILURE_ACTIONS, "restart/5000/restart/10000/restart/15000");
    assert.match(ps, /sc\.exe failure \$name reset= 300 actions= restart\/5000\/restart\/10000\/restart\/15000/);
    assert.match(ps, /'C:\\etc\\it''s\\config'/);
    assert.match(
      ps,
      /& \$nssm install \$name 'C:\\Program Files\\nodejs\\node\.exe' '--initial-old-space-size=64' 'C:\\ProgramData\\winfleet\\current\\bin\\winfleet-agent\.js' 'broker'/,
    );
    assert.match(ps, /ObjectName LocalSystem/);
  });
});
