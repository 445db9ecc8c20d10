/**
 * A host with orphans: a broker SIGKILLed leaves a host process running.
 * diagnose finds it from the broker's records while no broker runs, and from
 * the new broker once one does; the summary says so and how to end it.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AGENT, runClientProcess, script, startBrokerProcess } from "../broker/harness";
import { entryJson, unpack } from "./support";
import { agent, alive, exitOf, killedAfterTests, sleep, tempDir, waitFor } from "../support";

const children = killedAfterTests();
const runClient = (socket: string, tool: string) => runClientProcess(socket, tool, children);
const startBroker = (config: string) => startBrokerProcess(config, children);

interface Procs {
  from: string;
  processes: { name: string; pid: number; state: string }[];
}

describe("diagnose on a host with orphans", () => {
  it("marks the orphan, from the records without a broker and from the broker with one, and the summary names it", async () => {
    const dir = tempDir("diagnose-orphans-");
    const tool = script(join(tempDir("diagnose-orphans-bin-"), "exporter.sh"), "echo $$; exec sleep 300");
    const socket = join(dir, "run", "wins.sock");
    const config = join(dir, "broker.yaml");
    writeFileSync(
      config,
      [
        "white_list:",
        `  processPaths: [${tool}]`,
        `listen: ${socket}`,
        `proxy: ${dir}/run/proxy.sock`,
        `stateDir: ${dir}/state`,
      ].join("\n"),
    );
    const first = await startBroker(config);
    const orphan = await runClient(socket, tool);
    first.kill("SIGKILL");
    orphan.child.kill("SIGKILL");
    await sleep(300);
    assert.ok(alive(orphan.pid));

    const base = ["diagnose", "--root", join(dir, "root"), "--broker-config", config];
    const offline = await agent([...base, "--summary", "--out", join(dir, "offline.tar.gz")]);
    assert.equal(offline.code, 1, offline.stderr);
    assert.match(
      offline.stdout.split("\n")[0] ?? "",
      /^ORPHANS: 1 host process\(es\) left by a broker that died; winfleet-agent cli prc kill --orphans ends them/,
    );
    assert.match(offline.stdout, new RegExp(`rancher-wins-exporter\\.sh pid ${orphan.pid}`));
    const fromRecords = entryJson<Procs & { brokerError: string }>(
      unpack(join(dir, "offline.tar.gz")),
      "broker/processes.json",
    );
    assert.equal(fromRecords.from, "records");
    assert.deepEqual(
      fromRecords.processes.map((p) => [p.name, p.pid, p.state]),
      [["rancher-wins-exporter.sh", orphan.pid, "orphaned"]],
    );
    assert.ok(fromRecords.brokerError, "why the broker was not asked is kept");

    const second = await startBroker(config);
    const online = await agent([...base, "--out", join(dir, "online.tar.gz")]);
    assert.equal(online.code, 0, online.stderr);
    const fromBroker = entryJson<Procs>(unpack(join(dir, "online.tar.gz")), "broker/processes.json");
    assert.equal(fromBroker.from, "broker");
    assert.deepEqual(
      fromBroker.processes.map((p) => [p.name, p.state]),
      [["rancher-wins-exporter.sh", "orphaned"]],
    );

    const kill = spawnSync(process.execPath, [AGENT, "cli", "prc", "kill", "--orphans", "--server", socket], {
      encoding: "utf8",
    });
    assert.equal(kill.status, 0, kill.stderr);
    await waitFor(() => !alive(orphan.pid), 5000, "the orphan to die");
    const clean = await agent([...base, "--summary"]);
    assert.doesNotMatch(clean.stdout, /ORPHANS/);
    assert.match(clean.stdout, /broker: 0 host processes running, no orphans/);
    second.kill("SIGTERM");
    await exitOf(second);
  });
});
