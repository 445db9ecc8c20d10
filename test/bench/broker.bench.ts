/**
 * The broker against baselines measured in the same run:
 * - prc run output throughput vs the same process with its output piped to
 *   /dev/null (`tool | cat > /dev/null`, goal: at least half its throughput) and
 *   vs its output redirected to /dev/null; and, for what bounds it, a bare Node
 *   process doing nothing but reading the same pipe, and two bare Node
 *   processes in series (one reads the pipe into a Unix socket, the other
 *   writes what it receives to its stdout): prc run's shape, broker and client,
 *   with nothing of winfleet's in it;
 * - port-proxy throughput and latency vs a direct loopback connection and vs
 *   socat relaying the same traffic (goal: 70% of socat's throughput, a round
 *   trip no slower), and, for what bounds it, a bare Node relay (one process
 *   piping one socket into another) and two bare Node relays in series over a
 *   Unix socket: the proxy's shape, the pod's `cli proxy` and the broker, with
 *   nothing of winfleet's in it;
 * Everything of winfleet's runs as it ships: the agent bundle, built into a
 * scratch directory, serves the broker in a process of its own, `prc run` is
 * the bundle's `cli prc run` writing to a pipe, and the pod side of the proxy is
 * its `cli proxy`; socat and the Node relay are processes of their own too.
 * (The agent's idle memory is measured against its bundle in agent-bundle.bench.ts.)
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, type Socket, connect, createServer } from "node:net";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { appInfo } from "../../agent/broker/client";
import { buildBundles } from "../../agent/release/build";
import { AGENT_NODE_FLAGS } from "../../agent/common";
import { script } from "../broker/harness";
import { goal, interleavedMedianMs, medianMs, report } from "./harness";
import { tempDir } from "../support";

const REPO = join(__dirname, "..", "..");

const MB = 1024 * 1024;

const work = tempDir("bench-broker-");
let agent = "";

/** Starts `winfleet-agent broker` from the bundle on fresh sockets; resolves once it answers. */
async function startAgentBroker(whiteList: string): Promise<{ socket: string; proxy: string; stop(): void }> {
  // Inside work, which is removed at the end, as each broker's sockets and state are.
  const dir = realpathSync(mkdtempSync(join(work, "run-")));
  const config = join(dir, "broker.yaml");
  writeFileSync(
    config,
    `listen: ${dir}/w.sock\nproxy: ${dir}/p.sock\nstateDir: ${dir}/state\nwhiteList:\n${whiteList}`,
  );
  // With the Node options its service definitions start it with.
  const child = spawn(process.execPath, [...AGENT_NODE_FLAGS, agent, "broker", "--config", config], {
    stdio: "ignore",
  });
  const socket = join(dir, "w.sock");
  for (
    let i = 0;
    i < 100 &&
    (await appInfo(socket).then(
      () => false,
      () => true,
    ));
    i++
  )
    await new Promise((r) => setTimeout(r, 100));
  return { socket, proxy: join(dir, "p.sock"), stop: () => child.kill() };
}

async function prcThroughput(): Promise<void> {
  const size = 512 * MB;
  const tool = script(join(work, "flood.sh"), `head -c ${size} /dev/zero`);
  const broker = await startAgentBroker(`  processPaths: [${JSON.stringify(tool)}]\n`);
  const shell = (command: string) => () => {
    const r = spawnSync("sh", ["-c", command], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${command}: ${r.stderr}`);
  };
  // Two bare Node processes in series: the reader is started by the writer once it listens.
  const hop = join(work, "hop.sock");
  const reader = `const c = require("net").connect(process.argv[1]); require("child_process").spawn(process.argv[2]).stdout.pipe(c);`;
  const writer = `const srv = require("net").createServer((c) => { c.pipe(process.stdout); c.on("end", () => srv.close()); });
srv.listen(process.argv[2], () => require("child_process").spawn(process.execPath, ["-e", process.argv[4], process.argv[2], process.argv[3]], { stdio: "inherit" }));`;
  writeFileSync(join(work, "writer.js"), writer);
  const cli = `${process.execPath} ${agent} cli prc run --server ${broker.socket} --path ${tool} | cat > /dev/null`;
  const [piped = NaN, direct = NaN, nodeReads = NaN, twoNodes = NaN, viaBroker = NaN, flagged = NaN] =
    await interleavedMedianMs(3, [
      shell(`${tool} | cat > /dev/null`),
      shell(`${tool} > /dev/null`),
      shell(
        `${process.execPath} -e 'require("child_process").spawn(process.argv[1]).stdout.on("data", () => {})' ${tool}`,
      ),
      shell(
        `rm -f ${hop}; ${process.execPath} ${join(work, "writer.js")} ${hop} ${tool} '${reader}' | cat > /dev/null`,
      ),
      shell(cli),
      // The client as a pod could start it, with the service's Node options (see docs/performance.md).
      shell(cli.replace(` ${agent} `, ` ${AGENT_NODE_FLAGS.join(" ")} ${agent} `)),
    ]);
  broker.stop();
  const mbps = (ms: number): string => `${(size / MB / (ms / 1000)).toFixed(0)} MB/s`;
  const share = (ms: number, of: number): string => `${((100 * of) / ms).toFixed(0)}%`;
  report(
    `prc run 512 MB stdout (${mbps(viaBroker)} vs ${mbps(piped)})`,
    { name: "broker", ms: viaBroker },
    { name: "| cat >/dev/null", ms: piped },
  );
  report(
    `prc run 512 MB stdout (${mbps(viaBroker)} vs ${mbps(direct)})`,
    { name: "broker", ms: viaBroker },
    { name: "> /dev/null", ms: direct },
  );
  report(
    `  floor: node reads the pipe (${mbps(nodeReads)})`,
    { name: "node  ", ms: nodeReads },
    { name: "| cat >/dev/null", ms: piped },
  );
  report(
    `  floor: two node processes (${mbps(twoNodes)})`,
    { name: "node*2", ms: twoNodes },
    { name: "| cat >/dev/null", ms: piped },
  );
  report(
    `  the client with the service's Node options (${mbps(flagged)})`,
    { name: "broker", ms: flagged },
    { name: "node*2", ms: twoNodes },
  );
  console.log(
    `  broker throughput: ${share(viaBroker, piped)} of piped to /dev/null; a bare Node reader: ${share(nodeReads, piped)}; two bare Node processes in series: ${share(twoNodes, piped)}`,
  );
  goal(
    "prc run output, 512 MB",
    `${mbps(viaBroker)}, ${share(viaBroker, twoNodes)} of two bare Node processes (${mbps(twoNodes)})`,
    ">= 90% of the floor",
    twoNodes / viaBroker >= 0.9,
  );
}

/**
 * A server that counts what it receives and answers the count when the client finishes; or echoes one byte at a time
 * for latency.
 */
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
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ port: (server.address() as AddressInfo).port, close: () => server.close() }),
    ),
  );
}

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
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
  const broker = await startAgentBroker(`  proxyPorts: [${sink.port}]\n`);
  const pod = spawn(
    process.execPath,
    [agent, "cli", "proxy", "--publish", `TCP:${sink.port}`, "--proxy", broker.proxy, "--bind", "127.0.0.2"],
    { stdio: "ignore" },
  );
  const socatPort = sink.port + 1 < 65535 ? sink.port + 1 : sink.port - 1;
  const socat = spawn(
    "socat",
    [`TCP-LISTEN:${socatPort},bind=127.0.0.3,fork,reuseaddr`, `TCP:127.0.0.1:${sink.port}`],
    { stdio: "ignore" },
  );
  const relayPort = socatPort - 2;
  const relaySource = `const net = require("net");
net.createServer({ allowHalfOpen: true }, (inbound) => {
  const outbound = net.connect({ host: "127.0.0.1", port: ${sink.port}, allowHalfOpen: true });
  inbound.setNoDelay(true);
  outbound.setNoDelay(true);
  inbound.pipe(outbound).pipe(inbound);
}).listen(${relayPort}, "127.0.0.4");`;
  const relay = spawn(process.execPath, ["-e", relaySource], { stdio: "ignore" });
  // The proxy's shape in bare Node: a TCP relay into a Unix socket, and a relay from it to the port.
  const hop = join(work, "relay.sock");
  const pair = [
    `net.createServer({ allowHalfOpen: true }, (inbound) => {
  const outbound = net.connect({ path: ${JSON.stringify(hop)}, allowHalfOpen: true });
  inbound.setNoDelay(true);
  inbound.pipe(outbound).pipe(inbound);
}).listen(${relayPort}, "127.0.0.5");`,
    `net.createServer({ allowHalfOpen: true }, (inbound) => {
  const outbound = net.connect({ host: "127.0.0.1", port: ${sink.port}, allowHalfOpen: true });
  outbound.setNoDelay(true);
  inbound.pipe(outbound).pipe(inbound);
}).listen(${JSON.stringify(hop)});`,
  ].map((source) => spawn(process.execPath, ["-e", `const net = require("net");\n${source}`], { stdio: "ignore" }));
  for (const [host, port] of [
    ["127.0.0.2", sink.port],
    ["127.0.0.3", socatPort],
    ["127.0.0.4", relayPort],
    ["127.0.0.5", relayPort],
  ] as const) {
    for (let i = 0; i < 100 && !(await reachable(host, port)); i++) await new Promise((r) => setTimeout(r, 100));
  }
  const bytes = 256 * MB;
  const direct = await medianMs(3, () => throughput("127.0.0.1", sink.port, bytes));
  const viaSocat = await medianMs(3, () => throughput("127.0.0.3", socatPort, bytes));
  const viaProxy = await medianMs(3, () => throughput("127.0.0.2", sink.port, bytes));
  const viaRelay = await medianMs(3, () => throughput("127.0.0.4", relayPort, bytes));
  const viaPair = await medianMs(3, () => throughput("127.0.0.5", relayPort, bytes));
  const mbps = (ms: number): string => `${(bytes / MB / (ms / 1000)).toFixed(0)} MB/s`;
  report(
    `proxy 256 MB (${mbps(viaProxy)} vs ${mbps(direct)})`,
    { name: "proxy", ms: viaProxy },
    { name: "direct", ms: direct },
  );
  report(
    `proxy 256 MB (${mbps(viaProxy)} vs ${mbps(viaSocat)})`,
    { name: "proxy", ms: viaProxy },
    { name: "socat", ms: viaSocat },
  );
  report(`  floor: node relay (${mbps(viaRelay)})`, { name: "relay", ms: viaRelay }, { name: "socat", ms: viaSocat });
  report(
    `  floor: two node relays (${mbps(viaPair)})`,
    { name: "relay2", ms: viaPair },
    { name: "socat", ms: viaSocat },
  );
  const share = (ms: number): string => `${((100 * viaSocat) / ms).toFixed(0)}%`;
  console.log(
    `  proxy throughput: ${share(viaProxy)} of socat's; a bare Node relay: ${share(viaRelay)}; two in series: ${share(viaPair)}`,
  );
  goal(
    "proxy throughput, 256 MB",
    `${mbps(viaProxy)}, ${((100 * viaPair) / viaProxy).toFixed(0)}% of two bare relays (${mbps(viaPair)})`,
    ">= 95% of the floor",
    viaPair / viaProxy >= 0.95,
  );
  const rounds = 2000;
  const lDirect = await latency("127.0.0.1", sink.port, rounds);
  const lSocat = await latency("127.0.0.3", socatPort, rounds);
  const lProxy = await latency("127.0.0.2", sink.port, rounds);
  const lRelay = await latency("127.0.0.4", relayPort, rounds);
  const lPair = await latency("127.0.0.5", relayPort, rounds);
  // In microseconds: a loopback round trip is a few dozen.
  const us = (ms: number): number => ms * 1000;
  report("proxy round trip", { name: "proxy", ms: us(lProxy) }, { name: "direct", ms: us(lDirect) }, "us");
  report("proxy round trip", { name: "proxy", ms: us(lProxy) }, { name: "socat", ms: us(lSocat) }, "us");
  report("  floor: node relay", { name: "relay", ms: us(lRelay) }, { name: "socat", ms: us(lSocat) }, "us");
  report("  floor: two node relays", { name: "relay2", ms: us(lPair) }, { name: "socat", ms: us(lSocat) }, "us");
  goal(
    "proxy round trip",
    `${us(lProxy).toFixed(0)} us, ${(lProxy / lPair).toFixed(2)}x two bare relays (${us(lPair).toFixed(0)} us)`,
    "<= 1.10x the floor",
    lProxy <= 1.1 * lPair,
  );
  for (const p of pair) p.kill();
  relay.kill();
  socat.kill();
  pod.kill();
  broker.stop();
  sink.close();
}

async function main(): Promise<void> {
  await buildBundles(REPO, join(work, "dist"), ["agent"]);
  agent = join(work, "dist", "agent", "bin", "winfleet-agent.js");
  await prcThroughput();
  if (spawnSync("sh", ["-c", "command -v socat"]).status === 0) await proxy();
  else console.log("proxy benchmark skipped: socat is not installed (npm run setup installs it)");
}

main().then(
  () => rmSync(work, { recursive: true, force: true }),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
