/**
 * The broker against baselines measured in the same run:
 * - prc run output throughput vs the same process piped straight to /dev/null;
 * - port-proxy throughput and latency vs a direct loopback connection and vs
 *   socat relaying the same traffic;
 * - the agent's idle memory (RSS) with the broker serving vs an idle Node process.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { type AddressInfo, type Socket, connect, createServer } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type * as grpc from "@grpc/grpc-js";
import { publish } from "../../agent/broker/proxy-client";
import { AGENT, call, script, startBroker, tempDir, winsClient } from "../broker/harness";
import { medianMs, report } from "./harness";

const MB = 1024 * 1024;

async function prcThroughput(): Promise<void> {
  const bin = tempDir("bench-prc-");
  const size = 256 * MB;
  const tool = script(join(bin, "flood.sh"), `head -c ${size} /dev/zero`);
  const env = await startBroker({ processPaths: [tool] });
  const checksum = createHash("sha1").update(readFileSync(tool)).digest("hex");
  const direct = await medianMs(3, () => spawnSync("sh", ["-c", `${tool} > /dev/null`]));
  const client = winsClient("ProcessService", env.socket);
  const viaBroker = await medianMs(3, async () => {
    const started = await call<{ Data: { Value: string } }>(client, "Start", { Path: tool, Checksum: checksum });
    const ka = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(client, () => undefined);
    ka.write({ Data: started.Data });
    const wait = (client.Wait as (r: unknown) => grpc.ClientReadableStream<unknown>).call(client, { Data: started.Data });
    wait.on("data", () => undefined);
    await new Promise((r) => wait.on("end", r));
    ka.end();
    await new Promise((r) => setTimeout(r, 50));
  });
  client.close();
  await env.broker.stop();
  const mbps = (ms: number): string => `${((size / MB) / (ms / 1000)).toFixed(0)} MB/s`;
  report(`prc run 256 MB stdout (${mbps(viaBroker)} vs ${mbps(direct)})`, { name: "broker", ms: viaBroker }, { name: "/dev/null", ms: direct });
}

/** A server that counts what it receives and answers the count when the client finishes; or echoes one byte at a time for latency. */
function sinkServer(): Promise<{ port: number; close(): void }> {
  const server = createServer({ allowHalfOpen: true }, (s) => {
    let n = 0;
    let mode: "sink" | "echo" | undefined;
    s.on("data", (d: Buffer) => {
      mode ??= d[0] === 0x50 ? "echo" : "sink"; // 'P' opens a ping session
      if (mode === "echo") s.write(d);
      else n += d.length;
    });
    s.on("end", () => {
      if (mode === "sink") s.end(String(n));
      else s.end();
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ port: (server.address() as AddressInfo).port, close: () => server.close() })));
}

function throughput(host: string, port: number, bytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, allowHalfOpen: true });
    const chunk = Buffer.alloc(64 * 1024, 1);
    let sent = 0;
    const pump = (): void => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!s.write(chunk)) return void s.once("drain", pump);
      }
      s.end();
    };
    let answer = "";
    s.on("data", (d: Buffer) => (answer += d.toString()));
    s.on("end", () => (Number(answer) === sent ? resolve() : reject(new Error(`sink got ${answer} of ${sent}`))));
    s.on("error", reject);
    s.once("connect", pump);
  });
}

async function latency(host: string, port: number, rounds: number): Promise<number> {
  const s: Socket = connect({ host, port });
  await new Promise((r) => s.once("connect", r));
  s.setNoDelay(true);
  const t = performance.now();
  for (let i = 0; i < rounds; i++) {
    await new Promise<void>((resolve) => {
      s.once("data", () => resolve());
      s.write("P");
    });
  }
  const per = (performance.now() - t) / rounds;
  s.end();
  return per;
}

async function proxy(): Promise<void> {
  const sink = await sinkServer();
  const env = await startBroker({ proxyPorts: [sink.port] });
  const pod = await publish(env.proxy, sink.port, "127.0.0.2");
  const socatPort = sink.port + 1 < 65535 ? sink.port + 1 : sink.port - 1;
  const socat = spawn("socat", [`TCP-LISTEN:${socatPort},bind=127.0.0.3,fork,reuseaddr`, `TCP:127.0.0.1:${sink.port}`], { stdio: "ignore" });
  await new Promise((r) => setTimeout(r, 500));
  const bytes = 256 * MB;
  const direct = await medianMs(3, () => throughput("127.0.0.1", sink.port, bytes));
  const viaSocat = await medianMs(3, () => throughput("127.0.0.3", socatPort, bytes));
  const viaProxy = await medianMs(3, () => throughput("127.0.0.2", sink.port, bytes));
  const mbps = (ms: number): string => `${((bytes / MB) / (ms / 1000)).toFixed(0)} MB/s`;
  report(`proxy 256 MB (${mbps(viaProxy)} vs ${mbps(direct)})`, { name: "proxy", ms: viaProxy }, { name: "direct", ms: direct });
  report(`proxy 256 MB (${mbps(viaProxy)} vs ${mbps(viaSocat)})`, { name: "proxy", ms: viaProxy }, { name: "socat", ms: viaSocat });
  const rounds = 2000;
  const lDirect = await latency("127.0.0.1", sink.port, rounds);
  const lSocat = await latency("127.0.0.3", socatPort, rounds);
  const lProxy = await latency("127.0.0.2", sink.port, rounds);
  report("proxy round trip (ms each)", { name: "proxy", ms: lProxy }, { name: "direct", ms: lDirect });
  report("proxy round trip (ms each)", { name: "proxy", ms: lProxy }, { name: "socat", ms: lSocat });
  socat.kill();
  await pod.close();
  await env.broker.stop();
  sink.close();
}

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return Number(m?.[1] ?? NaN);
}

async function idleMemory(): Promise<void> {
  const dir = tempDir("bench-rss-");
  const config = join(dir, "broker.yaml");
  writeFileSync(config, `listen: ${dir}/w.sock\nproxy: ${dir}/p.sock\nstateDir: ${dir}/state\nallowAll: true\n`);
  const agent = spawn(process.execPath, [AGENT, "broker", "--config", config], { stdio: "ignore" });
  const idle = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  await new Promise((r) => setTimeout(r, 5000));
  const a = rssKb(agent.pid ?? 0);
  const b = rssKb(idle.pid ?? 0);
  console.log(`${"idle RSS, broker serving".padEnd(28)} agent ${(a / 1024).toFixed(1).padStart(7)} MB | bare node ${(b / 1024).toFixed(1).padStart(7)} MB | ratio ${(a / b).toFixed(2)}x  (agent runs through tsx from source)`);
  agent.kill();
  idle.kill();
}

async function main(): Promise<void> {
  await prcThroughput();
  if (spawnSync("sh", ["-c", "command -v socat"]).status === 0) await proxy();
  else console.log("proxy benchmark skipped: socat is not installed (npm run setup installs it)");
  await idleMemory();
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
