/**
 * The proxy socket's two protocols on one listener (agent/broker/proxy-socket.ts),
 * driven from their descriptions with plain sockets and an independent
 * proto-loader client: the stream tunnel's request line and answers, bytes and
 * half-close through it, gRPC tunnels alongside, refusals, a reloaded config,
 * and a broker that stops with tunnels open. Loopback only; every wait is bounded.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readdirSync, writeFileSync } from "node:fs";
import { type AddressInfo, type Server, connect, createServer } from "node:net";
import { join } from "node:path";
import { describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { reloadBrokerConfig } from "../../agent/broker/client";
import { parseBrokerConfig } from "../../agent/broker/config";
import { openStreamTunnel, publish } from "../../agent/broker/proxy-client";
import { Broker } from "../../agent/broker/server";
import { silentLogger } from "../../agent/common/log";
import { startBroker, tunnelRawClient } from "./harness";
import { sleep, tempDir } from "../support";

/** An echo server, half-open: it answers what it got, then ends when the client ends. */
async function echoServer(): Promise<{ server: Server; port: number }> {
  const server = createServer({ allowHalfOpen: true }, (s) => s.pipe(s));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends `request` on a fresh connection to the proxy socket and collects everything until it ends. */
function exchange(proxy: string, request: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ path: proxy, allowHalfOpen: true });
    const got: Buffer[] = [];
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error("no end within 10 s"));
    }, 10_000);
    s.on("data", (d: Buffer) => got.push(d));
    s.on("end", () => {
      clearTimeout(timer);
      s.end();
      resolve(Buffer.concat(got).toString("latin1"));
    });
    s.on("close", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(got).toString("latin1"));
    });
    s.on("error", () => undefined);
    // Half-closed: the far side still answers, then ends.
    s.end(request);
  });
}

describe("the proxy socket", () => {
  it("tunnels a stream: request line, ok, the bytes as they are, each direction ending on its own", async () => {
    const echo = await echoServer();
    const env = await startBroker({ proxyPorts: [echo.port] });
    try {
      const payload = randomBytes(3 * 1024 * 1024);
      // The request line and the first bytes in one write: the broker keeps what follows the line.
      const answer = await exchange(
        env.proxy,
        Buffer.concat([Buffer.from(`winfleet-tunnel/1 ${echo.port} test-pod\n`), payload]),
      );
      assert.equal(answer.slice(0, 3), "ok\n");
      assert.ok(Buffer.from(answer.slice(3), "latin1").equals(payload), "every byte back, in order");
    } finally {
      await env.broker.stop();
      echo.server.close();
    }
  });

  it("refuses with one error line naming the status: a port not allowed, a port nobody listens on, a bad request", async () => {
    const echo = await echoServer();
    const closed = await echoServer();
    closed.server.close();
    const env = await startBroker({ proxyPorts: [echo.port, closed.port] });
    try {
      assert.equal(
        await exchange(env.proxy, "winfleet-tunnel/1 22 pod\n"),
        `error PermissionDenied port 22 is not in proxyPorts (allowed: ${echo.port}, ${closed.port})\n`,
      );
      assert.match(
        await exchange(env.proxy, `winfleet-tunnel/1 ${closed.port} pod\n`),
        new RegExp(`^error Unavailable could not reach localhost:${closed.port} on the host: .*ECONNREFUSED.*\\n$`),
      );
      assert.equal(
        await exchange(env.proxy, "winfleet-tunnel/1 99999 pod\n"),
        "error InvalidArgument expected: winfleet-tunnel/1 <port> <client>\n",
      );
      assert.equal(await exchange(env.proxy, "GET / HTTP/1.1\r\n\r\n"), "", "neither protocol: closed without a word");
      assert.equal(
        await exchange(env.proxy, `winfleet-tunnel/1 ${"9".repeat(600)}`),
        "",
        "a first line that never ends",
      );
      await assert.rejects(openStreamTunnel(env.proxy, 22), /^Error: PermissionDenied port 22 is not in proxyPorts/);
      // The broker runs in this process: a refused connection must not stay open on its side.
      const fds = (): number => readdirSync("/proc/self/fd").length;
      const before = fds();
      for (let i = 0; i < 50; i++) await exchange(env.proxy, "winfleet-tunnel/1 22 pod\n");
      await sleep(200);
      assert.ok(fds() - before < 10, `${fds() - before} descriptors left open by 50 refusals`);
    } finally {
      await env.broker.stop();
      echo.server.close();
    }
  });

  it("serves gRPC tunnels and stream tunnels at once, and a reloaded config applies to the next tunnel", async () => {
    const echo = await echoServer();
    const dir = tempDir("proxy-socket-");
    const config = join(dir, "broker.yaml");
    const yaml = (ports: number[]): string =>
      `listen: ${join(dir, "run", "w.sock")}\nproxy: ${join(dir, "run", "p.sock")}\nstateDir: ${join(dir, "state")}\nwhiteList:\n  proxyPorts: [${ports.join(", ")}]\n`;
    writeFileSync(config, yaml([echo.port]));
    const broker = await Broker.start({
      config: parseBrokerConfig(yaml([echo.port]), config),
      configFile: config,
      runDir: dir,
      stateDir: join(dir, "state"),
      entryFile: __filename,
      log: silentLogger,
    });
    try {
      const raw = tunnelRawClient(broker.proxyPath);
      const grpcTunnel = new Promise<Buffer>((resolve, reject) => {
        const stream = (raw.Open as () => grpc.ClientDuplexStream<unknown, { Data?: Buffer }>).call(raw);
        const got: Buffer[] = [];
        stream.on("data", (f: { Data?: Buffer }) => f.Data && got.push(f.Data));
        stream.on("end", () => resolve(Buffer.concat(got)));
        stream.on("error", reject);
        stream.write({ Open: { Port: echo.port, Client: "grpc-pod" } });
        stream.write({ Data: Buffer.from("over gRPC") });
        stream.end();
      });
      const streamed = exchange(broker.proxyPath, `winfleet-tunnel/1 ${echo.port} pod\nover the stream`);
      assert.equal((await grpcTunnel).toString(), "over gRPC");
      assert.equal(await streamed, "ok\nover the stream");
      raw.close();

      writeFileSync(config, yaml([9796]));
      await reloadBrokerConfig(broker.listenPath, config);
      assert.match(
        await exchange(broker.proxyPath, `winfleet-tunnel/1 ${echo.port} pod\n`),
        /^error PermissionDenied port \d+ is not in proxyPorts \(allowed: 9796\)\n$/,
      );
    } finally {
      await broker.stop();
      echo.server.close();
    }
  });

  it("tunnels a framed stream (winfleet-tunnel/2): each direction's end travels as a frame, the socket stays open", async () => {
    const echo = await echoServer();
    const env = await startBroker({ proxyPorts: [echo.port] });
    try {
      const frame = (b: Buffer): Buffer => Buffer.concat([Buffer.alloc(4, 0), b]).fill(0, 0, 0);
      const framed = (b: Buffer): Buffer => {
        const f = frame(b);
        f.writeUInt32BE(b.length, 0);
        return f;
      };
      const payload = randomBytes(200 * 1024);
      const s = connect({ path: env.proxy, allowHalfOpen: true });
      const got: Buffer[] = [];
      s.on("data", (d: Buffer) => got.push(d));
      // The request, the payload in two frames and the end frame, without ending the socket: the echo server
      // sees its client's end only through the end frame.
      s.write(`winfleet-tunnel/2 ${echo.port} framed-pod\n`);
      s.write(
        Buffer.concat([framed(payload.subarray(0, 1000)), framed(payload.subarray(1000)), framed(Buffer.alloc(0))]),
      );
      const all = (): Buffer => Buffer.concat(got);
      const start = Date.now();
      while (all().length < 3 + payload.length + 4 && Date.now() - start < 10_000) await sleep(20);
      const bytes = all();
      assert.equal(bytes.subarray(0, 3).toString(), "ok\n");
      // Read the frames back: the echoed bytes, then an end frame.
      const body: Buffer[] = [];
      let at = 3;
      let ended = false;
      while (at + 4 <= bytes.length) {
        const n = bytes.readUInt32BE(at);
        at += 4;
        if (n === 0) {
          ended = true;
          break;
        }
        body.push(bytes.subarray(at, at + n));
        at += n;
      }
      assert.ok(ended, "the host side's end arrives as an end frame");
      assert.ok(Buffer.concat(body).equals(payload), "every byte back, in order");
      assert.equal(s.readableEnded, false, "the broker leaves closing the connection to its client");
      const closed = new Promise<void>((r) => s.once("close", () => r()));
      s.end();
      await closed;
    } finally {
      await env.broker.stop();
      echo.server.close();
    }
  });

  it("publishes a port through framed tunnels: an answer the host gives after the pod side ended still arrives", async () => {
    const host = createServer({ allowHalfOpen: true }, (c) => {
      const got: Buffer[] = [];
      c.on("data", (d: Buffer) => got.push(d));
      c.on("end", () => setTimeout(() => c.end(`answer to ${Buffer.concat(got).toString()}`), 300));
    });
    await new Promise<void>((r) => host.listen(0, "127.0.0.1", r));
    const port = (host.address() as AddressInfo).port;
    const env = await startBroker({ proxyPorts: [port] });
    const published = await publish(env.proxy, port, "127.0.0.2", () => undefined, true);
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const c = connect({ host: "127.0.0.2", port, allowHalfOpen: true });
        const got: Buffer[] = [];
        c.on("data", (d: Buffer) => got.push(d));
        c.on("end", () => resolve(Buffer.concat(got).toString()));
        c.on("error", reject);
        c.end("the request");
      });
      assert.equal(answer, "answer to the request");
    } finally {
      await published.close();
      await env.broker.stop();
      host.close();
    }
  });

  it("ends open stream tunnels when the broker stops", async () => {
    const echo = await echoServer();
    const env = await startBroker({ proxyPorts: [echo.port] });
    const { connection } = await openStreamTunnel(env.proxy, echo.port, "pod");
    // The broker's end of it goes: this side sees the end (it is half-open, so it decides when to close).
    const closed = new Promise<void>((r) => connection.once("end", () => r()));
    connection.resume();
    await env.broker.stop();
    await Promise.race([
      closed,
      new Promise((_, reject) => setTimeout(() => reject(new Error("tunnel still open 5 s after stop")), 5000)),
    ]);
    echo.server.close();
  });
});
