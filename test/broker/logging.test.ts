/** Nothing secret is logged: a broker at debug level never prints a process's arguments or environment. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { Broker } from "../../agent/broker/server";
import { createLogger } from "../../agent/common/log";
import { AGENT, call, script, winsClient } from "./harness";
import { sleep, tempDir } from "../support";

describe("broker logs", () => {
  it("carry names and counts, never arguments or environment values", async () => {
    const dir = tempDir("log-");
    const tool = script(join(dir, "t.sh"), "echo ok");
    let logged = "";
    const out = new PassThrough();
    out.on("data", (d: Buffer) => (logged += d.toString()));
    const broker = await Broker.start({
      config: {
        debug: true,
        listen: join(dir, "w.sock"),
        proxy: join(dir, "p.sock"),
        whiteList: { processPaths: [tool], proxyPorts: [], allowAll: false, envs: ["TOKEN"] },
      },
      runDir: dir,
      stateDir: join(dir, "state"),
      entryFile: AGENT,
      log: createLogger("broker", { debug: true, out }),
    });
    const client = winsClient("ProcessService", broker.listenPath);
    const started = await call<{ Data: { Value: string } }>(client, "Start", {
      Path: tool,
      Checksum: createHash("sha1").update(readFileSync(tool)).digest("hex"),
      Args: ["--token=hunter2-arg"],
      Envs: ["TOKEN=hunter2-env"],
    });
    const ka = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(
      client,
      () => undefined,
    );
    ka.write({ Data: started.Data });
    ka.end();
    await sleep(300);
    client.close();
    await broker.stop();
    assert.match(logged, /started host process/);
    assert.doesNotMatch(logged, /hunter2/);
  });
});
