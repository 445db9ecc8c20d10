/**
 * The broker's socket directory, with real directories and a real broker: a
 * directory other users can write to is made private before anything binds, a
 * symbolic link or another user's directory is refused, the sockets are 0600,
 * and a non-root user's default is a directory of their own.
 */
import assert from "node:assert/strict";
import { chmodSync, chownSync, lstatSync, mkdirSync, statSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { Broker } from "../../agent/broker/server";
import { defaultRunDir } from "../../agent/common/defaults";
import { AgentError } from "../../agent/common/errors";
import { silentLogger } from "../../agent/common/log";
import { AGENT } from "./harness";
import { tempDir } from "../support";

const isRoot = process.getuid?.() === 0;

function start(runDir: string, stateDir: string): Promise<Broker> {
  return Broker.start({
    config: {
      debug: false,
      listen: "wins",
      proxy: "proxy",
      whiteList: { processPaths: [], proxyPorts: [], allowAll: false },
    },
    runDir,
    stateDir,
    entryFile: AGENT,
    log: silentLogger,
  });
}

async function refusal(p: Promise<Broker>): Promise<AgentError> {
  const r = await p.then(
    (b) => b,
    (e: unknown) => e,
  );
  if (r instanceof Broker) {
    await r.stop();
    assert.fail("the broker started");
  }
  assert.ok(r instanceof AgentError, String(r));
  return r;
}

describe("the broker's socket directory", () => {
  it("takes write access to an existing directory from group and others before listening, and binds 0600 sockets", async () => {
    const dir = tempDir("sockdir-");
    const run = join(dir, "run");
    mkdirSync(run);
    chmodSync(run, 0o777);
    const broker = await start(run, join(dir, "state"));
    try {
      assert.equal(statSync(run).mode & 0o777, 0o755);
      assert.equal(statSync(broker.listenPath).mode & 0o777, 0o600);
      assert.equal(statSync(broker.proxyPath).mode & 0o777, 0o600);
    } finally {
      await broker.stop();
    }
  });

  it("creates a missing directory 0700 whatever the umask", async () => {
    const dir = tempDir("sockdir-");
    const previous = process.umask(0);
    try {
      const broker = await start(join(dir, "run"), join(dir, "state"));
      await broker.stop();
    } finally {
      process.umask(previous);
    }
    assert.equal(statSync(join(dir, "run")).mode & 0o777, 0o700);
  });

  it("refuses a symbolic link in place of the directory", async () => {
    const dir = tempDir("sockdir-");
    mkdirSync(join(dir, "elsewhere"), { mode: 0o700 });
    symlinkSync(join(dir, "elsewhere"), join(dir, "run"));
    const e = await refusal(start(join(dir, "run"), join(dir, "state")));
    assert.equal(e.code, "PERMISSION_DENIED");
    assert.match(e.message, /socket directory .*\/run is a symbolic link/);
  });

  it(
    "refuses a directory another user owns, even a private one",
    { skip: isRoot ? false : "needs root to make another user's directory" },
    async () => {
      const dir = tempDir("sockdir-");
      const run = join(dir, "run");
      mkdirSync(run, { mode: 0o700 });
      chownSync(run, 65534, 65534);
      const e = await refusal(start(run, join(dir, "state")));
      assert.match(e.message, /is owned by uid 65534, not by the broker's user/);
      assert.equal(lstatSync(run).uid, 65534);
    },
  );

  it("refuses a shared directory it owns (sticky and world-writable, as /tmp), and leaves its mode alone", async () => {
    const dir = tempDir("sockdir-");
    const shared = join(dir, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const e = await refusal(start(shared, join(dir, "state")));
    assert.match(e.message, /is a shared directory/);
    assert.equal(statSync(shared).mode & 0o7777, 0o1777);
  });

  it("leaves a system directory's read access alone (0755 stays 0755)", async () => {
    const dir = tempDir("sockdir-");
    const run = join(dir, "run");
    mkdirSync(run);
    chmodSync(run, 0o755);
    const broker = await start(run, join(dir, "state"));
    await broker.stop();
    assert.equal(statSync(run).mode & 0o777, 0o755);
  });

  it("refuses a socket named in another user's shared directory", async () => {
    const dir = tempDir("sockdir-");
    const shared = join(dir, "shared");
    mkdirSync(shared);
    chownSync(shared, 65534, 65534);
    chmodSync(shared, 0o1777);
    const e = await refusal(
      Broker.start({
        config: {
          debug: false,
          listen: join(shared, "wins.sock"),
          proxy: join(shared, "proxy.sock"),
          whiteList: { processPaths: [], proxyPorts: [], allowAll: false },
        },
        runDir: shared,
        stateDir: join(dir, "state"),
        entryFile: AGENT,
        log: silentLogger,
      }),
    );
    assert.equal(e.code, "PERMISSION_DENIED");
  });
});

describe("the default run directory", () => {
  it("is /run/winfleet for root and WINFLEET_RUN_DIR when set", () => {
    assert.equal(defaultRunDir({}, 0), "/run/winfleet");
    assert.equal(defaultRunDir({ WINFLEET_RUN_DIR: "/srv/wf" }, 1000), "/srv/wf");
  });

  it("is under the user's runtime directory, else a directory named for the user, never a shared /tmp/winfleet", () => {
    assert.equal(defaultRunDir({ XDG_RUNTIME_DIR: "/run/user/1000" }, 1000), "/run/user/1000/winfleet");
    const fallback = defaultRunDir({}, 1000);
    assert.notEqual(fallback, "/tmp/winfleet");
    assert.match(fallback, /winfleet-1000$/);
  });
});
