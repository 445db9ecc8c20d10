/**
 * A host process's output arrives byte for byte however the client reads it:
 * 27 MB of random bytes, switching between stdout and stderr, through batches
 * the broker encodes itself (agent/broker/output-batcher.ts), to a client that
 * keeps up and to one that keeps stopping, so that messages queue in the
 * server stream and the process is paused and resumed. The client is built
 * from the .proto files by proto-loader, not by the broker's own adapter.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, it } from "node:test";
import { runProcess } from "../../agent/broker/client";
import { runThroughWins, script, startBroker, winsClient } from "./harness";
import { tempDir } from "../support";

const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

describe("process output under backpressure", () => {
  const dir = tempDir("output-");
  const data = randomBytes(24 * 1024 * 1024);
  writeFileSync(join(dir, "random.bin"), data);
  // Output on both streams, switching mid-flood, so the batches switch kinds mid-stream.
  const tool = script(
    join(dir, "flood.sh"),
    `cat ${join(dir, "random.bin")}; printf between >&2; head -c 3000000 ${join(dir, "random.bin")}; printf end >&2`,
  );

  for (const reader of ["keeps up", "stops every 2 MiB for 20 ms"] as const) {
    it(`delivers every byte to a client that ${reader}`, async () => {
      const env = await startBroker({ processPaths: [tool] });
      const client = winsClient("ProcessService", env.socket);
      try {
        let sinceStop = 0;
        const {
          out: got,
          err,
          code,
        } = await runThroughWins(client, tool, (chunk, wait) => {
          sinceStop += chunk.length;
          if (reader !== "keeps up" && sinceStop >= 2 * 1024 * 1024) {
            sinceStop = 0;
            wait.pause();
            setTimeout(() => wait.resume(), 20);
          }
        });
        assert.equal(got.length, data.length + 3_000_000);
        assert.equal(sha256(got), sha256(Buffer.concat([data, data.subarray(0, 3_000_000)])), "stdout arrived changed");
        assert.equal(err, "betweenend");
        assert.equal(code, 0);
      } finally {
        client.close();
        await env.broker.stop();
      }
    });
  }
});

describe("prc run's output going nowhere", () => {
  it("ends the run with an error naming the output, and the host process with it", { timeout: 30_000 }, async () => {
    const dir = tempDir("output-closed-");
    const tool = script(join(dir, "endless.sh"), "exec head -c 4000000000 /dev/zero");
    const env = await startBroker({ processPaths: [tool] });
    try {
      // What `prc run ... | head` meets once head has exited.
      const closed = new Writable({
        write: (_chunk, _encoding, callback) => callback(Object.assign(new Error("write EPIPE"), { code: "EPIPE" })),
      });
      const run = await runProcess(env.socket, { Path: tool }, { stdout: closed, stderr: new Writable() });
      await assert.rejects(run.done, /cannot write the process's output: write EPIPE/);
      for (let i = 0; i < 100 && env.broker.processes().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(env.broker.processes(), [], "the host process was released");
    } finally {
      await env.broker.stop();
    }
  });
});
