/**
 * Under load, nothing is lost: 200 concurrent prc run streams each deliver every
 * byte their process wrote, and 500 concurrent connections through the port proxy
 * each get back exactly what they sent. Loopback only; every loop is bounded.
 */
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { type AddressInfo, connect, createServer } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { status as grpcStatus } from "@grpc/grpc-js";
import { publish } from "../../agent/broker/proxy-client";
import { AGENT, runThroughWins, script, startBroker, tunnelRawClient, winsClient } from "./harness";
import { exitOf, tempDir } from "../support";

describe("the broker under load", () => {
  it("200 concurrent prc run streams lose no byte", async () => {
    const bin = tempDir("load-");
    const count = 200;
    const size = 128 * 1024;
    const tools = Array.from({ length: count }, (_, i) =>
      script(
        join(bin, `gen-${i}.sh`),
        `yes "stream-${i}-the-quick-brown-fox" | head -c ${size}; printf "done-${i}" >&2`,
      ),
    );
    const env = await startBroker({ processPaths: tools });
    const client = winsClient("ProcessService", env.socket);
    try {
      const results = await Promise.all(tools.map(async (tool, i) => ({ i, ...(await runThroughWins(client, tool)) })));
      for (const r of results) {
        const expected = spawnSync("sh", ["-c", `yes "stream-${r.i}-the-quick-brown-fox" | head -c ${size}`]).stdout;
        assert.equal(r.out.length, size, `stream ${r.i} length`);
        assert.ok(r.out.equals(expected), `stream ${r.i} bytes`);
        assert.equal(r.err, `done-${r.i}`);
        assert.equal(r.code, 0);
      }
    } finally {
      client.close();
      await env.broker.stop();
    }
  });

  it("500 concurrent proxied connections echo every byte", async () => {
    const echo = createServer({ allowHalfOpen: true }, (s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    const port = (echo.address() as AddressInfo).port;
    const env = await startBroker({ proxyPorts: [port] });
    // The pod side listens on another loopback address, as a pod's own network would.
    const pod = await publish(env.proxy, port, "127.0.0.2");
    try {
      const roundTrip = (payload: Buffer): Promise<Buffer> =>
        new Promise((resolve, reject) => {
          const socket = connect({ port, host: "127.0.0.2", allowHalfOpen: true });
          const got: Buffer[] = [];
          socket.on("data", (d: Buffer) => got.push(d));
          socket.on("end", () => resolve(Buffer.concat(got)));
          socket.on("error", reject);
          socket.end(payload);
        });
      const payloads = Array.from({ length: 500 }, (_, i) => randomBytes(4096 + ((i * 997) % 60_000)));
      const echoed = await Promise.all(payloads.map(roundTrip));
      echoed.forEach((b, i) =>
        assert.ok(
          b.equals(payloads[i] ?? Buffer.alloc(0)),
          `connection ${i}: ${b.length} of ${payloads[i]?.length} bytes`,
        ),
      );
    } finally {
      await pod.close();
      await env.broker.stop();
      echo.close();
    }
  });

  it("refuses a port not in proxyPorts, on the wire and in the client CLI", async () => {
    const env = await startBroker({ proxyPorts: [9796] });
    try {
      const raw = tunnelRawClient(env.proxy);
      const stream = (raw.Open as () => grpc.ClientDuplexStream<unknown, unknown>).call(raw);
      stream.write({ Open: { Port: 22, Client: "test" } });
      const error = await new Promise<grpc.ServiceError>((resolve) => {
        stream.on("error", resolve);
        stream.on("data", () => undefined);
      });
      assert.equal(error.code, grpcStatus.PERMISSION_DENIED);
      assert.match(error.details, /port 22 is not in proxyPorts \(allowed: 9796\)/);
      raw.close();
      // Asynchronously: the broker answering the CLI runs in this process.
      const cli = spawn(
        process.execPath,
        [AGENT, "cli", "proxy", "--proxy", env.proxy, "--publish", "TCP:22", "--bind", "127.0.0.3"],
        { stdio: ["ignore", "ignore", "pipe"], timeout: 20_000 },
      );
      let stderr = "";
      cli.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
      assert.equal(await exitOf(cli), 1);
      assert.match(stderr, /does not allow port\(s\) 22 \(proxyPorts: 9796\)/);
    } finally {
      await env.broker.stop();
    }
  });
});
