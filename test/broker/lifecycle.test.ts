/**
 * A host process lives exactly as long as its client: killing the client (as a
 * container dying would) kills the whole tree; a broker that restarts finds
 * what an earlier broker left, and starting the same binary again replaces it.
 */
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { status as grpcStatus } from "@grpc/grpc-js";
import { call, runClientProcess, script, startBroker, startBrokerProcess, winsClient } from "./harness";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { alive, exitOf, killedAfterTests, sleep, tempDir, waitFor } from "../support";

const children = killedAfterTests();

const runClient = (socket: string, tool: string) => runClientProcess(socket, tool, children);

// A process with a child and a grandchild, printing all three pids.
const TREE =
  'sleep 300 & a=$!; sh -c "sleep 300 & echo \\$! > $0.grand; wait" "$0" & b=$!; sleep 0.3; echo "$$ $a $b $(cat "$0.grand")"; wait';

describe("host process lifetime", () => {
  it("kills the whole process tree when the client dies", async () => {
    const bin = tempDir("tree-");
    const tool = script(join(bin, "tree.sh"), TREE);
    const env = await startBroker({ processPaths: [tool] });
    try {
      const { child, pids } = await runClient(env.socket, tool);
      assert.equal(pids.length, 4);
      assert.ok(pids.every(alive));
      child.kill("SIGKILL"); // the container dies: no goodbye, the connection just breaks
      await waitFor(() => pids.every((p) => !alive(p)), 10_000, `pids ${pids.join(" ")} to die`);
      await waitFor(() => env.broker.processes().length === 0, 5000, "the broker to forget the process");
    } finally {
      await env.broker.stop();
    }
  });

  it("ends the process when the client is interrupted, and the client exits with its code", async () => {
    const bin = tempDir("int-");
    const tool = script(join(bin, "wait.sh"), 'echo "$$"; exec sleep 300');
    const env = await startBroker({ processPaths: [tool] });
    try {
      const { child, pids } = await runClient(env.socket, tool);
      const exited = exitOf(child);
      child.kill("SIGINT");
      assert.equal(await exited, 137); // 128 + SIGKILL: the broker killed it
      assert.ok(!alive(pids[0] ?? 0));
    } finally {
      await env.broker.stop();
    }
  });

  it("refuses a second start of a running name with ALREADY_EXISTS, without crashing", async () => {
    const bin = tempDir("dup-");
    const tool = script(join(bin, "dup.sh"), "echo $$; exec sleep 300");
    const env = await startBroker({ processPaths: [tool] });
    try {
      const { child } = await runClient(env.socket, tool);
      const client = winsClient("ProcessService", env.socket);
      const checksum = createHash("sha1").update(readFileSync(tool)).digest("hex");
      await assert.rejects(
        call(client, "Start", { Path: tool, Checksum: checksum }),
        (e: grpc.ServiceError) => e.code === grpcStatus.ALREADY_EXISTS,
      );
      client.close();
      child.kill("SIGKILL");
    } finally {
      await env.broker.stop();
    }
  });

  it("a restarted broker replaces what the previous one left when the binary runs again", async () => {
    const dir = tempDir("restart-");
    const bin = tempDir("restart-bin-");
    const tool = script(join(bin, "long.sh"), "echo $$; exec sleep 300");
    const config = join(dir, "config.yaml");
    writeFileSync(
      config,
      [
        "white_list:",
        `  processPaths: [${tool}]`,
        `listen: ${dir}/run/wins.sock`,
        `proxy: ${dir}/run/proxy.sock`,
        `stateDir: ${dir}/state`,
      ].join("\n"),
    );
    const startServer = (): Promise<ChildProcess> => startBrokerProcess(config, children);
    const first = await startServer();
    const { child: client, pids } = await runClient(`${dir}/run/wins.sock`, tool);
    first.kill("SIGKILL"); // the agent crashes; its host process lives on
    client.kill("SIGKILL");
    await sleep(300);
    assert.ok(alive(pids[0] ?? 0), "the orphan outlived its broker");
    const second = await startServer();
    const again = await runClient(`${dir}/run/wins.sock`, tool);
    assert.ok(!alive(pids[0] ?? 0), "the stale process was killed before its name started again");
    assert.ok(alive(again.pids[0] ?? 0));
    // Stop the broker while the client is still connected: the broker itself must end the process.
    second.kill("SIGTERM");
    await exitOf(second);
    assert.ok(!alive(again.pids[0] ?? 0), "a stopping broker ends its processes");
    again.child.kill("SIGKILL");
  });
});
