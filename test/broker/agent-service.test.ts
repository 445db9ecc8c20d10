/**
 * `winfleet.agent.v1.AgentService` over a real socket, through the CLI a pod
 * runs: `service reload-config` swaps the whitelist and proxy ports at once and
 * keeps the old config when the new one is bad; `ready` reports a broker
 * without the lifecycle engine as not ready, and the serving agent's status as
 * the upgrader's probe reads it.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { Broker } from "../../agent/broker/server";
import { loadBrokerConfig } from "../../agent/broker/config";
import { silentLogger } from "../../agent/common/log";
import { AGENT, call, script, tunnelRawClient } from "./harness";
import { tempDir } from "../support";

// Asynchronous: the broker runs in this process and must keep answering while the CLI waits.
const run = (args: string[]): Promise<{ code: number | null; out: string }> =>
  new Promise((resolve) => {
    const c = spawn(process.execPath, [AGENT, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    c.stdout.on("data", (d: Buffer) => (out += d.toString()));
    c.stderr.on("data", (d: Buffer) => (out += d.toString()));
    c.on("close", (code) => resolve({ code, out }));
  });

describe("AgentService", () => {
  const dir = tempDir("agent-service-");
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "run"), { recursive: true, mode: 0o700 });
  const allowed = script(join(dir, "allowed.sh"), "echo allowed");
  const later = script(join(dir, "later.sh"), "echo later");
  const configFile = join(dir, "broker.yaml");
  const socket = join(dir, "run", "wins.sock");
  const write = (paths: string[], ports: number[], extra = ""): void =>
    writeFileSync(
      configFile,
      `listen: ${socket}\nproxy: ${join(dir, "run", "proxy.sock")}\nwhite_list:\n  processPaths: [${paths.join(", ")}]\n  proxyPorts: [${ports.join(", ")}]\n${extra}`,
    );

  it("reloads the whitelist and proxy ports without a restart, and keeps them when the new config is bad", async () => {
    write([allowed], [9796]);
    const broker = await Broker.start({
      config: await loadBrokerConfig(configFile),
      runDir: join(dir, "run"),
      stateDir: join(dir, "state"),
      entryFile: AGENT,
      log: silentLogger,
      configFile,
    });
    try {
      assert.equal(
        (await run(["cli", "prc", "run", "--server", socket, "--path", later])).code,
        1,
        "a path not yet whitelisted ran",
      );
      write([allowed, later], [9796, 9182]);
      const reloaded = await run(["service", "reload-config", "--server", socket]);
      assert.equal(reloaded.code, 0, reloaded.out);
      assert.match(reloaded.out, /reloaded: 2 process paths, 2 proxy ports/);
      const ran = await run(["cli", "prc", "run", "--server", socket, "--path", later]);
      assert.equal(ran.code, 0, ran.out);
      assert.equal(ran.out, "later\n");
      const ports = await call<{ Ports: number[] }>(tunnelRawClient(broker.proxyPath), "ListPorts", {});
      assert.deepEqual(ports.Ports, [9182, 9796]);

      writeFileSync(configFile, "white_list: [this is not a mapping");
      const bad = await run(["service", "reload-config", "--server", socket]);
      assert.equal(bad.code, 1);
      assert.match(bad.out, /INVALID_ARGUMENT/);
      assert.equal(
        (await run(["cli", "prc", "run", "--server", socket, "--path", later])).code,
        0,
        "a bad reload dropped the old whitelist",
      );

      writeFileSync(configFile, `listen: ${join(dir, "other.sock")}\nwhite_list: { processPaths: [${allowed}] }\n`);
      const moved = await run(["service", "reload-config", "--server", socket]);
      assert.equal(moved.code, 1);
      assert.match(moved.out, /changes listen or proxy, which only a restart applies/);
    } finally {
      await broker.stop();
    }
  });

  it("says a broker without the lifecycle engine is not ready", async () => {
    write([allowed], []);
    const broker = await Broker.start({
      config: await loadBrokerConfig(configFile),
      runDir: join(dir, "run"),
      stateDir: join(dir, "state"),
      entryFile: AGENT,
      log: silentLogger,
      configFile,
    });
    try {
      const r = await run(["ready", "--server", socket]);
      assert.equal(r.code, 1);
      assert.match(r.out, /not ready: the agent does not answer .*UNAVAILABLE.*without the lifecycle engine/);
    } finally {
      await broker.stop();
    }
    const gone = await run(["ready", "--server", socket]);
    assert.equal(gone.code, 1);
    assert.match(gone.out, /not ready: the agent does not answer/);
  });
});
