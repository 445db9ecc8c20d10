/**
 * Broker test helpers: a broker on temporary sockets, and a client built from
 * the .proto files by @grpc/proto-loader — a different code path from the
 * server's generated codecs, as an old wins client would be.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { BrokerConfig } from "../../agent/broker/config";
import { Broker } from "../../agent/broker/server";
import { silentLogger } from "../../agent/common/log";
import { tempDir, waitFor } from "../support";

export const PROTO_DIR = join(__dirname, "..", "..", "agent", "broker", "proto");
export const AGENT = join(__dirname, "..", "..", "bin", "winfleet-agent.js");

/** The proto-loader view of every broker proto. */
export const packageDefinition = protoLoader.loadSync(
  [
    "wins/application.proto",
    "wins/host.proto",
    "wins/network.proto",
    "wins/hns.proto",
    "wins/route.proto",
    "wins/process.proto",
    "winfleet/proxy.proto",
  ],
  { includeDirs: [PROTO_DIR], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
);
const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as {
  wins: Record<string, grpc.ServiceClientConstructor>;
  winfleet: { proxy: { v1: Record<string, grpc.ServiceClientConstructor> } };
};

/** A raw client for a wins service on `socket`. */
export function winsClient(
  service: string,
  socket: string,
): grpc.Client & Record<string, (...a: unknown[]) => unknown> {
  const Ctor = loaded.wins[service];
  if (!Ctor) throw new Error(`no service wins.${service}`);
  return new Ctor(`unix:${socket}`, grpc.credentials.createInsecure()) as grpc.Client &
    Record<string, (...a: unknown[]) => unknown>;
}

/** A raw client for the tunnel service. */
export function tunnelRawClient(socket: string): grpc.Client & Record<string, (...a: unknown[]) => unknown> {
  const Ctor = loaded.winfleet.proxy.v1.TunnelService;
  if (!Ctor) throw new Error("no TunnelService");
  return new Ctor(`unix:${socket}`, grpc.credentials.createInsecure()) as grpc.Client &
    Record<string, (...a: unknown[]) => unknown>;
}

/** Calls a unary method, resolving with the response or rejecting with the ServiceError. */
export function call<T>(
  client: grpc.Client & Record<string, (...a: unknown[]) => unknown>,
  method: string,
  req: unknown,
): Promise<T> {
  return new Promise((resolve, reject) => {
    (client[method] as (r: unknown, cb: (e: grpc.ServiceError | null, r: T) => void) => void).call(
      client,
      req,
      (e, r) => (e ? reject(e) : resolve(r)),
    );
  });
}

/** A Wait message as proto-loader decodes it (oneofs named in `Options`). */
export interface WaitMessage {
  StdOut?: Buffer;
  StdErr?: Buffer;
  ExitCode?: number;
  Options?: string;
}

/**
 * `prc run` as a wins client does it: Start `tool` (with its SHA1), hold a
 * KeepAlive, Wait, and gather the output; `onStdout` may pause the stream to
 * read slowly. Resolves once the stream ends.
 */
export async function runThroughWins(
  client: grpc.Client & Record<string, (...a: unknown[]) => unknown>,
  tool: string,
  onStdout?: (chunk: Buffer, wait: grpc.ClientReadableStream<WaitMessage>) => void,
): Promise<{ out: Buffer; err: string; code: number }> {
  const checksum = createHash("sha1").update(readFileSync(tool)).digest("hex");
  const started = await call<{ Data: { Value: string } }>(client, "Start", { Path: tool, Checksum: checksum });
  const ka = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(client, () => undefined);
  ka.write({ Data: started.Data });
  const wait = (client.Wait as (r: unknown) => grpc.ClientReadableStream<WaitMessage>).call(client, {
    Data: started.Data,
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let code = -1;
  wait.on("data", (m: WaitMessage) => {
    if (m.Options === "StdOut" && m.StdOut) {
      out.push(m.StdOut);
      onStdout?.(m.StdOut, wait);
    }
    if (m.Options === "StdErr" && m.StdErr) err.push(m.StdErr);
    if (m.Options === "ExitCode") code = m.ExitCode ?? -1;
  });
  try {
    await new Promise<void>((resolve, reject) => {
      wait.on("end", resolve);
      wait.on("error", reject);
    });
  } finally {
    ka.end();
  }
  return { out: Buffer.concat(out), err: Buffer.concat(err).toString(), code };
}

/** Writes an executable shell script. */
export function script(path: string, body: string): string {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A broker in this process on fresh sockets. */
export async function startBroker(
  whiteList: Partial<BrokerConfig["whiteList"]>,
  dir = tempDir("broker-"),
): Promise<{ broker: Broker; dir: string; socket: string; proxy: string }> {
  mkdirSync(join(dir, "run"), { recursive: true, mode: 0o700 });
  const config: BrokerConfig = {
    debug: false,
    listen: join(dir, "run", "wins.sock"),
    proxy: join(dir, "run", "proxy.sock"),
    whiteList: { processPaths: [], proxyPorts: [], allowAll: false, ...whiteList },
    stateDir: join(dir, "state"),
  };
  const broker = await Broker.start({
    config,
    runDir: join(dir, "run"),
    stateDir: join(dir, "state"),
    entryFile: AGENT,
    log: silentLogger,
  });
  return { broker, dir, socket: broker.listenPath, proxy: broker.proxyPath };
}

/** Starts `winfleet-agent broker --config FILE` as a process (added to `children`) and waits until it listens. */
export async function startBrokerProcess(config: string, children: ChildProcess[]): Promise<ChildProcess> {
  const server = spawn(process.execPath, [AGENT, "broker", "--config", config], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(server);
  let log = "";
  server.stderr?.on("data", (d: Buffer) => (log += d.toString()));
  await waitFor(() => log.includes("broker listening"), 15_000, `the broker to listen (log: ${log})`);
  return server;
}

/**
 * Runs `cli prc run --path TOOL` through the broker at `socket` (added to `children`); resolves
 * with the pids the tool prints on its first line (`pid`, the first of them).
 */
export function runClientProcess(
  socket: string,
  tool: string,
  children: ChildProcess[],
): Promise<{ child: ChildProcess; pid: number; pids: number[] }> {
  const child = spawn(process.execPath, [AGENT, "cli", "prc", "run", "--server", socket, "--path", tool], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n")[0]?.trim();
      if (out.includes("\n") && line) {
        const pids = line.split(/\s+/).map(Number);
        resolve({ child, pid: pids[0] ?? NaN, pids });
      }
    });
    child.once("exit", (code) => reject(new Error(`client exited ${code} before printing its pids: ${out}`)));
  });
}
