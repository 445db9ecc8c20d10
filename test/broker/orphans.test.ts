/**
 * Orphans: a host process outlives a broker that is SIGKILLed; the next broker
 * finds it in the state the first one recorded, `cli prc ls` marks it, and
 * `cli prc kill --orphans` (or by name) ends its whole tree through the broker.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AGENT, runClientProcess, script, startBrokerProcess } from "./harness";
import { alive, exitOf, killedAfterTests, sleep, tempDir, waitFor } from "../support";

const children = killedAfterTests();
const runClient = (socket: string, tool: string) => runClientProcess(socket, tool, children);
const startServer = (config: string) => startBrokerProcess(config, children);

const cli = (...args: string[]): { code: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [AGENT, "cli", "prc", ...args], { encoding: "utf8", timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

interface Row {
  name: string;
  pid: number;
  state: string;
  path: string;
  startedAt: string;
  brokerPid: number;
}

describe("orphaned host processes", () => {
  it("are listed by the next broker, marked, and ended by prc kill --orphans", async () => {
    const dir = tempDir("orphans-");
    const bin = tempDir("orphans-bin-");
    const keep = script(join(bin, "keeper.sh"), "echo $$; sleep 300 & wait");
    const lost = script(join(bin, "lost.sh"), "echo $$; sleep 300 & wait");
    const config = join(dir, "config.yaml");
    const socket = join(dir, "run", "wins.sock");
    writeFileSync(
      config,
      [
        "white_list:",
        `  processPaths: [${keep}, ${lost}]`,
        `listen: ${socket}`,
        `proxy: ${dir}/run/proxy.sock`,
        `stateDir: ${dir}/state`,
      ].join("\n"),
    );

    const first = await startServer(config);
    const orphan = await runClient(socket, lost);
    first.kill("SIGKILL"); // the broker dies without a word; its host process lives on
    orphan.child.kill("SIGKILL");
    await sleep(300);
    assert.ok(alive(orphan.pid), "the process outlived its broker");
    const noBroker = cli("ls", "--server", socket);
    assert.equal(noBroker.code, 1);
    assert.match(noBroker.stderr, /no broker answers on .*wins\.sock .*winfleet-agent diagnose --summary/);

    const second = await startServer(config);
    const managed = await runClient(socket, keep);

    const ls = cli("ls", "--server", socket, "--json");
    assert.equal(ls.code, 0, ls.stderr);
    const rows = JSON.parse(ls.stdout) as Row[];
    const byName = new Map(rows.map((r) => [r.name, r]));
    assert.equal(byName.get("rancher-wins-lost.sh")?.state, "orphaned");
    assert.equal(byName.get("rancher-wins-lost.sh")?.pid, orphan.pid);
    assert.equal(
      byName.get("rancher-wins-lost.sh")?.path,
      join(bin, "rancher-wins-lost.sh"),
      "the path run: the rancher-wins- twin",
    );
    assert.equal(
      byName.get("rancher-wins-lost.sh")?.brokerPid,
      first.pid,
      "the orphan names the broker that started it",
    );
    assert.ok(
      !Number.isNaN(Date.parse(byName.get("rancher-wins-lost.sh")?.startedAt ?? "")),
      "a start time is recorded",
    );
    assert.equal(byName.get("rancher-wins-keeper.sh")?.state, "running");
    assert.equal(byName.get("rancher-wins-keeper.sh")?.brokerPid, second.pid);

    const table = cli("ls", "--server", socket);
    assert.match(table.stdout, /^rancher-wins-lost\.sh\s+\d+\s+ORPHANED/m);
    assert.match(table.stdout, /^rancher-wins-keeper\.sh\s+\d+\s+running/m);

    const unknown = cli("kill", "--server", socket, "nosuch.sh", "rancher-wins-lost.sh");
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no managed process named nosuch\.sh/);
    assert.ok(alive(orphan.pid), "an unknown name kills nothing");

    const killed = cli("kill", "--server", socket, "--orphans");
    assert.equal(killed.code, 0, killed.stderr);
    assert.match(killed.stdout, /killed rancher-wins-lost\.sh/);
    await waitFor(() => !alive(orphan.pid), 5000, "the orphan to die");
    assert.ok(alive(managed.pid), "--orphans leaves the processes with clients alone");
    const after = JSON.parse(cli("ls", "--server", socket, "--json").stdout) as Row[];
    assert.deepEqual(
      after.map((r) => `${r.name}:${r.state}`),
      ["rancher-wins-keeper.sh:running"],
    );

    assert.equal(cli("kill", "--server", socket).code, 2, "kill with neither names nor --orphans is a usage error");
    const byNameKill = cli("kill", "--server", socket, "rancher-wins-keeper.sh");
    assert.equal(byNameKill.code, 0, byNameKill.stderr);
    await waitFor(() => !alive(managed.pid), 5000, "the named process to die");
    second.kill("SIGTERM");
    await exitOf(second);
  });
});
