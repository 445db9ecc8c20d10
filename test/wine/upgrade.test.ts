/**
 * Self-upgrade and the service manager on Windows: the bundle's `up` switching
 * the `current` junction while the running agent's files stay in use, and
 * rolling back a version that does not answer; restarting a service through
 * sc.exe and the Service Control Manager.
 *
 * Relies on (Windows): junctions (what `current` is), a directory (which a
 * junction is) never being renamed over, files of a running program staying in
 * use (so nothing of the running agent is replaced: a new version goes beside
 * it), sc.exe's `query`, `stop` and `start`, and the numbers of a service's states.
 * Wine differs: Wine 8 makes no junctions, so `up` stops at the switch there;
 * the test checks it stops cleanly (the release installed whole, nothing
 * switched, nothing left half-done), and the Windows workflow runs the
 * upgrade and the rollback. Wine's sc.exe exits 1 without a word for a service
 * that does not exist (Windows: 1060), and it runs services as Wine does, not
 * under the real SCM's rules (recovery actions, accounts): the agent's own
 * service (NSSM, failure actions) is tested by the Windows workflow's Pester tests.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cpSync, existsSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { type ScResult, restartService, serviceState } from "../../agent/upgrade/service-manager.win32";
import { AGENT, agent, scratch, underWine, uniqueName, wineDiffers } from "./support";

const T = { timeout: 300_000 };
const dir = scratch("upgrade");

/** The agent bundle of this run at `version`; `broken` never answers. */
function bundle(version: string, broken = false): string {
  const out = join(dir, `bundle-${version}`);
  cpSync(dirname(dirname(AGENT)), out, { recursive: true });
  writeFileSync(join(out, "package.json"), JSON.stringify({ name: "winfleet", version }));
  if (broken) writeFileSync(join(out, "bin", "winfleet-agent.js"), "process.exit(1);\n");
  return out;
}

describe("self-upgrade on Windows", () => {
  const install = join(dir, "install");
  const pipe = uniqueName("wf-up");
  const config = join(dir, "broker.json");
  writeFileSync(
    config,
    JSON.stringify({ listen: pipe, proxy: `${pipe}-proxy`, stateDir: join(dir, "state"), allowAll: true }),
  );
  const up = (bundleDir: string) =>
    agent(
      [
        "up",
        "--bundle",
        bundleDir,
        "--install-dir",
        install,
        "--config",
        config,
        "--manager",
        "pidfile",
        "--timeout",
        "30",
      ],
      { timeoutMs: 240_000 },
    );
  const version = async (): Promise<string> => {
    const r = await agent(["cli", "app", "info", "--server", pipe]);
    return r.code === 0
      ? (JSON.parse(r.stdout) as { Server: { Version: string } }).Server.Version
      : `(${r.stderr.trim()})`;
  };

  it("switches versions beside the running agent, and rolls back one that does not answer", T, async (t) => {
    if (underWine) {
      wineDiffers(
        t,
        "Wine 8 makes no junctions, so up stops at the switch; the Windows workflow upgrades and rolls back",
      );
      const r = await up(bundle("1.0.0-wine"));
      assert.equal(r.code, 1, r.stdout);
      assert.match(r.stderr, /cannot make a junction to releases[\\/]1\.0\.0-wine in .*install/);
      assert.equal(
        readFileSync(join(install, "releases", "1.0.0-wine", "package.json"), "utf8"),
        '{"name":"winfleet","version":"1.0.0-wine"}',
      );
      assert.deepEqual(readdirSync(install).sort(), ["releases"], "nothing switched, nothing half-done");
      assert.deepEqual(readdirSync(join(install, "releases")), ["1.0.0-wine"]);
      return;
    }
    try {
      const first = await up(bundle("1.0.0-wine"));
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.stdout.trim(), "upgraded: (none) -> 1.0.0-wine");
      assert.equal(await version(), "1.0.0-wine");
      // The running agent's release stays in use while the next one is installed beside it and switched to.
      const second = await up(bundle("2.0.0-wine"));
      assert.equal(second.code, 0, second.stderr);
      assert.equal(second.stdout.trim(), "upgraded: 1.0.0-wine -> 2.0.0-wine");
      assert.equal(await version(), "2.0.0-wine");
      assert.match(readlinkSync(join(install, "current")), /releases\\2\.0\.0-wine\\?$/);
      const broken = await up(bundle("3.0.0-broken", true));
      assert.equal(broken.code, 1);
      assert.match(
        broken.stderr,
        /3\.0\.0-broken did not answer within 30000 ms; rolled back to 2\.0\.0-wine, which answers/,
      );
      assert.equal(await version(), "2.0.0-wine");
      assert.deepEqual(
        readdirSync(install).filter((n) => n.startsWith(".")),
        [],
        "no link left aside",
      );
    } finally {
      const pid = Number(existsSync(join(install, "agent.pid")) ? readFileSync(join(install, "agent.pid"), "utf8") : 0);
      if (pid > 0) process.kill(pid);
    }
  });
});

describe("the service manager through sc.exe", () => {
  /** The real sc.exe, each command recorded. */
  const recorded =
    (calls: string[]) =>
    (args: readonly string[]): Promise<ScResult> =>
      new Promise((resolve) => {
        calls.push(args[0] ?? "");
        execFile("sc.exe", [...args], { windowsHide: true }, (e, stdout, stderr) =>
          resolve({ code: e ? (typeof e.code === "number" ? e.code : 1) : 0, output: `${stdout}${stderr}` }),
        );
      });

  it("restarts a service from running (stop, wait for STOPPED, start) and from stopped (start)", T, async () => {
    // The print spooler is a service both Windows Server and Wine have; restarting it harms neither.
    const calls: string[] = [];
    const sc = recorded(calls);
    await restartService("Spooler", sc);
    assert.equal(serviceState((await sc(["query", "Spooler"])).output), 4, "running after the first restart");
    calls.length = 0;
    await restartService("Spooler", sc);
    assert.deepEqual([calls[0], calls[1], calls.at(-1)], ["query", "stop", "start"], calls.join(" "));
    assert.ok(calls.filter((c) => c === "query").length >= 2, "it waited for the stop");
    assert.equal(serviceState((await sc(["query", "Spooler"])).output), 4, "running again");
  });

  it("names a service that is not installed", T, async (t) => {
    const name = uniqueName("wf-missing");
    if (underWine) {
      wineDiffers(t, "Wine's sc.exe exits 1 without a word for an unknown service; Windows exits 1060");
      await assert.rejects(restartService(name), new RegExp(`sc query ${name} failed \\(1\\)`));
      return;
    }
    await assert.rejects(restartService(name), new RegExp(`the ${name} service is not installed`));
  });
});
