/**
 * Broker test helpers: a broker on temporary sockets, and a client built from
 * the .proto files by @grpc/proto-loader — a different code path from the
 * server's generated codecs, as an old wins client would be.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrokerConfig } from "../../agent/broker/config";
import { Broker } from "../../agent/broker/server";
import { silentLogger } from "../../agent/common/log";
import { type WaitMessage, call, runThroughWins, tempDir, waitFor, winsProtos } from "../support";

export const PROTO_DIR = join(__dirname, "..", "..", "agent", "broker", "proto");
export const AGENT = join(__dirname, "..", "..", "bin", "winfleet-agent.js");

const protos = winsProtos(PROTO_DIR);
/** The proto-loader view of every broker proto. */
export const packageDefinition = protos.packageDefinition;
/** A raw client for a wins service on `socket`. */
export const winsClient = protos.winsClient;
/** A raw client for the tunnel service. */
export const tunnelRawClient = protos.tunnelRawClient;
export { call, runThroughWins, type WaitMessage };

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
