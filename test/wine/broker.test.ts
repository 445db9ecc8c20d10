/**
 * The broker on `\\.\pipe\rancher_wins`, as a wins client on the host reaches
 * it: the agent bundle's `broker` on Windows' Node, driven by the agent's own
 * `cli` and by a proto-loader client over the named pipes. Host programs are
 * copies of node.exe (running host-program.ts) and of cmd.exe.
 *
 * Relies on (Windows): named pipes as Node serves them (libuv), command lines
 * built by Node and parsed by the program's C runtime, process exit codes as
 * 32-bit values, TerminateProcess, and a program's file locked while it runs.
 * Wine differs: its taskkill has no `/T` (a host program's own children
 * outlive it here; the Windows workflow asserts they do not), its powershell.exe
 * is a stub (no process start times, so orphans of a crashed broker are not
 * recognised here; no firewall rules, and no pipe DACL set or read back), and
 * it lets a second server create a pipe that already has one (the broker's own
 * check refuses a second broker).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { type AddressInfo, type Socket, connect, createServer } from "node:net";
import { join } from "node:path";
import { type TestContext, after, before, describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { type WaitMessage, call, freePort, runThroughWins, sleep, waitFor, winsProtos } from "../support";
import { renderPipeAclCheck } from "../../agent/broker/security";
import { patternByte } from "./pattern";
import {
  AGENT,
  PROTO_DIR,
  type Started,
  agent,
  gone,
  program,
  running,
  scratch,
  start,
  underWine,
  wineDiffers,
} from "./support";

/** Each test's bound: under Wine a node.exe takes seconds to start. */
const T = { timeout: 180_000 };
const PIPE = "rancher_wins";
const PROXY_PIPE = "rancher_wins_proxy";
const protos = winsProtos(PROTO_DIR);
const processes = () => protos.winsClient("ProcessService", `\\\\.\\pipe\\${PIPE}`);

describe("the broker on \\\\.\\pipe\\rancher_wins", () => {
  const dir = scratch("broker");
  const node = join(dir, "bin", "node.exe");
  const cmd = join(dir, "bin", "cmd.exe");
  const host = program("host");
  const config = join(dir, "wins.json");
  let proxyPort = 0;
  let broker: Started;

  before(async () => {
    mkdirSync(join(dir, "bin"));
    copyFileSync(process.execPath, node);
    copyFileSync(join(process.env.SystemRoot ?? "C:\\Windows", "System32", "cmd.exe"), cmd);
    proxyPort = await freePort();
    writeFileSync(
      config,
      JSON.stringify({
        listen: PIPE,
        proxy: PROXY_PIPE,
        whiteList: { processPaths: [node, cmd], proxyPorts: [proxyPort] },
        stateDir: join(dir, "state"),
      }),
    );
    broker = start(AGENT, ["broker", "--config", config]);
    await waitFor(
      () => broker.output().includes("broker listening"),
      60_000,
      `the broker to listen: ${broker.output()}`,
    );
  });
  after(() => broker.child.kill());

  it("runs a host program for the agent's own client, which exits with the program's exit code", T, async () => {
    const r = await agent(["cli", "prc", "run", "--path", cmd, "--args", "/d /c echo hello& exit 3"]);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout.trim(), "hello");
  });

  it(
    "hands a program its arguments as its C runtime parses them (spaces, quotes, backslashes, cmd's metacharacters)",
    T,
    async () => {
      // Relies on: Node quoting each argument for CommandLineToArgvW's rules, which node.exe parses by.
      const args = ["a b", 'say "hi"', "C:\\dir with space\\", "trailing\\\\", "", "&|<>^%PATH%", "tab\there"];
      const r = await runThroughWins(processes(), node, undefined, [host, "argv", ...args]);
      assert.equal(r.code, 0, r.err);
      assert.deepEqual(JSON.parse(r.out.toString()), args);
    },
  );

  it("reports exit codes as Windows gives them, beyond 255 and with the high bit set", T, async () => {
    for (const code of [1, 256, 3010]) {
      const r = await runThroughWins(processes(), cmd, undefined, ["/d", "/c", `exit ${code}`]);
      assert.equal(r.code, code, `cmd /c exit ${code}: ${r.err}`);
    }
    // 0xC0000005 (an access violation): a DWORD on Windows, signed in the protocol's int32. How every
    // code maps (0, 255, -1 as 0xFFFFFFFF, signals) is agent/broker/child-exit.test.ts's, without a process.
    for (const [given, seen] of [["-1073741819", -1073741819]] as const) {
      const r = await runThroughWins(processes(), cmd, undefined, ["/d", "/c", `exit ${given}`]);
      assert.equal(r.code, seen, `cmd /c exit ${given}: ${r.err}`);
      const client = await agent(["cli", "prc", "run", "--path", cmd, "--args", `/d /c exit ${given}`]);
      assert.equal(client.code, seen >>> 0, `cli prc run of exit ${given}: ${client.stderr}`);
    }
  });

  it(
    "keeps a host program alive while its client holds KeepAlive, and ends it when the client lets go",
    T,
    async (t) => {
      const client = processes();
      const { pids, keepAlive, waited } = await startTree(client);
      await sleep(500);
      assert.ok(running(pids.program), "the host program runs while its client holds on");
      keepAlive.end();
      await gone(pids.program, "the host program after KeepAlive ended");
      await waited;
      await treeEnded(t, pids.child);
      client.close();
    },
  );

  it("gives both pipes wins's DACL: only Administrators and SYSTEM may write to them", T, (t) => {
    const unconfirmed = broker
      .output()
      .split("\n")
      .filter((l) => l.includes("cannot confirm the pipe's DACL"));
    if (underWine) {
      // The broker ran its PowerShell, which Wine's stub answers with nothing: it says it cannot confirm.
      wineDiffers(
        t,
        "powershell.exe is a stub and pipe ACLs are not enforced: the Windows workflow reads the DACL back",
      );
      for (const pipe of [PIPE, PROXY_PIPE])
        assert.ok(
          unconfirmed.some((l) => l.includes(`${pipe}"`)),
          `the broker reports ${pipe}'s DACL unconfirmed: ${broker.output()}`,
        );
      return;
    }
    assert.deepEqual(unconfirmed, [], "the broker confirmed each pipe's DACL");
    for (const pipe of [PIPE, PROXY_PIPE]) {
      // Read back independently of the broker, by the check the docs give for a node.
      const script = renderPipeAclCheck(`\\\\.\\pipe\\${pipe}`);
      execFileSync("powershell.exe", ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", script], {
        windowsHide: true,
      });
    }
  });

  it("ends the host program when the agent's client process is killed", T, async (t) => {
    const run = start(AGENT, ["cli", "prc", "run", "--path", node, "--args", `${host} tree`]);
    await waitFor(() => /^\d+ \d+\s/.test(run.output()), 30_000, `the host program's pids: ${run.output()}`);
    const [program, child] = run.output().trim().split(/\s+/).map(Number) as [number, number];
    assert.ok(running(program));
    run.child.kill(); // TerminateProcess: the client's KeepAlive stream breaks
    await gone(program, "the host program of a killed client");
    await treeEnded(t, child);
  });

  it("ends a managed program by name (prc kill), and prc ls lists it first", T, async (t) => {
    const client = processes();
    const { pids, keepAlive, waited } = await startTree(client);
    const ls = await agent(["cli", "prc", "ls", "--json"]);
    const rows = JSON.parse(ls.stdout) as { name: string; pid: number; state: string }[];
    assert.deepEqual(
      rows.map((r) => [r.name, r.pid, r.state]),
      [["rancher-wins-node", pids.program, "running"]],
    );
    const kill = await agent(["cli", "prc", "kill", "rancher-wins-node"]);
    assert.equal(kill.code, 0, kill.stderr);
    assert.equal(kill.stdout.trim(), "killed rancher-wins-node");
    await gone(pids.program, "the killed host program");
    await waited;
    keepAlive.end();
    await treeEnded(t, pids.child);
    client.close();
  });

  it(
    "ends the Wait stream when the program exits, though a child it left in the background holds its output",
    T,
    async () => {
      const started = Date.now();
      const r = await runThroughWins(processes(), node, undefined, [host, "background"]);
      const [, child] = r.out.toString().trim().split(/\s+/).map(Number) as [number, number];
      try {
        assert.equal(r.code, 0, r.err);
        assert.ok(running(child), "the background child still runs");
        assert.ok(
          Date.now() - started < 60_000,
          `Wait ended ${Date.now() - started} ms after the start, not with the child`,
        );
      } finally {
        process.kill(child);
      }
    },
  );

  it(
    "refuses a second start of a running name with ALREADY_EXISTS, leaving the running program's file alone",
    T,
    async () => {
      // Relies on: Windows refusing to replace the file of a running program (the copy the broker started).
      const client = processes();
      const { pids, keepAlive, waited } = await startTree(client);
      const copy = join(dir, "bin", "rancher-wins-node.exe");
      const before = readFileSync(copy).length;
      const second = await call(client, "Start", {
        Path: node,
        Checksum: sha1(node),
        Args: [host, "tree"],
      }).catch((e: grpc.ServiceError) => e);
      assert.equal((second as grpc.ServiceError).code, 6, String(second)); // ALREADY_EXISTS
      assert.match((second as grpc.ServiceError).details, /already running for another client/);
      assert.equal(readFileSync(copy).length, before);
      assert.ok(running(pids.program));
      keepAlive.end();
      await gone(pids.program, "the host program after KeepAlive ended");
      await waited;
      client.close();
    },
  );

  it(
    "streams 8 MiB of output byte for byte to a client that reads slowly (back-pressure through the pipe)",
    T,
    async () => {
      const total = 8 * 1024 * 1024;
      const client = processes();
      let paused = 0;
      const r = await runThroughWins(
        client,
        node,
        (_chunk, wait) => {
          if (++paused % 16 !== 0) return;
          wait.pause();
          setTimeout(() => wait.resume(), 20);
        },
        [host, "output", String(total), "7"],
      );
      client.close();
      assert.equal(r.code, 7, r.err);
      assert.equal(r.err, "done\n");
      assert.equal(r.out.length, total);
      for (let i = 0; i < total; i++) if (r.out[i] !== patternByte(i)) assert.fail(`byte ${i} differs`);
    },
  );

  it("refuses a second broker on the pipe, naming it, and the first goes on answering", T, async () => {
    const second = await agent(["broker", "--config", config], { timeoutMs: 60_000 });
    assert.equal(second.code, 1, second.stdout + second.stderr);
    assert.match(second.stderr, /another broker is already listening on \\\\\.\\pipe\\rancher_wins/);
    const info = await agent(["cli", "app", "info"]);
    assert.equal(info.code, 0, info.stderr);
    assert.equal((JSON.parse(info.stdout) as { Server: { Version: string } }).Server.Version.length > 0, true);
  });

  describe("the port proxy over its pipe", () => {
    let proxy: Started;
    const bind = "127.0.0.2";
    let hostServer: ReturnType<typeof createServer>;
    let onHost: (s: Socket) => void = () => undefined;

    before(async () => {
      hostServer = createServer({ allowHalfOpen: true }, (s) => onHost(s));
      await new Promise<void>((r) => hostServer.listen(proxyPort, "127.0.0.1", r));
      assert.equal((hostServer.address() as AddressInfo).port, proxyPort);
      proxy = start(AGENT, ["cli", "proxy", "--publish", `TCP:${proxyPort}`, "--bind", bind]);
      await waitFor(() => proxy.output().includes("proxying"), 60_000, `cli proxy to listen: ${proxy.output()}`);
    });
    after(() => {
      proxy.child.kill();
      hostServer.close();
    });

    it(
      "carries a request the pod side ends before the host answers (its half-close), then the late answer",
      T,
      async () => {
        // Relies on: libuv ending a Windows pipe connection ~50 ms after its own side shuts down unless
        // data arrives: the tunnel carries each direction's end inside the pipe instead.
        onHost = (s) => {
          const got: Buffer[] = [];
          s.on("data", (d: Buffer) => got.push(d));
          s.on("end", () => setTimeout(() => s.end(`answer to ${Buffer.concat(got).toString()}`), 400));
        };
        const answer = await exchange(bind, proxyPort, (c) => c.end("the request"));
        assert.equal(answer, "answer to the request");
      },
    );

    it("carries the host side's end while the pod side goes on sending", T, async () => {
      let received = "";
      const hostDone = new Promise<void>((resolve) => {
        onHost = (s) => {
          s.end("greeting, and no more from the host");
          s.on("data", (d: Buffer) => (received += d.toString()));
          s.on("end", () => resolve());
        };
      });
      const answer = await exchange(bind, proxyPort, (c) => {
        c.once("end", () => setTimeout(() => c.end("late words from the pod"), 400));
      });
      await hostDone;
      assert.equal(answer, "greeting, and no more from the host");
      assert.equal(received, "late words from the pod");
    });

    it("carries half-close through TunnelService (gRPC over the pipe) too", T, async () => {
      onHost = (s) => {
        const got: Buffer[] = [];
        s.on("data", (d: Buffer) => got.push(d));
        s.on("end", () => setTimeout(() => s.end(`grpc answer to ${Buffer.concat(got).toString()}`), 400));
      };
      const client = protos.tunnelRawClient(`\\\\.\\pipe\\${PROXY_PIPE}`);
      const stream = (client.Open as () => grpc.ClientDuplexStream<unknown, { Frame?: string; Data?: Buffer }>).call(
        client,
      );
      const got: Buffer[] = [];
      stream.on("data", (f: { Frame?: string; Data?: Buffer }) => {
        if (f.Frame === "Data" && f.Data) got.push(f.Data);
      });
      const ended = new Promise<void>((resolve, reject) => {
        stream.on("end", resolve);
        stream.on("error", reject);
      });
      stream.write({ Open: { Port: proxyPort, Client: "wine-test" } });
      stream.write({ Data: Buffer.from("the grpc request") });
      stream.end();
      await ended;
      client.close();
      assert.equal(Buffer.concat(got).toString(), "grpc answer to the grpc request");
    });
  });

  /** Starts host-program's `tree` through the wins client; resolves once it printed its pids. */
  async function startTree(client: ReturnType<typeof processes>): Promise<{
    pids: { program: number; child: number };
    keepAlive: grpc.ClientWritableStream<unknown>;
    /** Resolves when the Wait stream has ended, however it ended. */
    waited: Promise<void>;
  }> {
    const started = await call<{ Data: { Value: string } }>(client, "Start", {
      Path: node,
      Checksum: sha1(node),
      Args: [host, "tree"],
    });
    const keepAlive = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(
      client,
      () => undefined,
    );
    keepAlive.write({ Data: started.Data });
    const wait = (client.Wait as (r: unknown) => grpc.ClientReadableStream<WaitMessage>).call(client, {
      Data: started.Data,
    });
    const waited = new Promise<void>((resolve) => {
      wait.once("end", resolve);
      wait.once("error", () => resolve());
      wait.once("close", resolve);
    });
    let out = "";
    wait.on("data", (m: WaitMessage) => {
      if (m.StdOut) out += m.StdOut.toString();
    });
    await waitFor(() => /^\d+ -?\d+\s/.test(out), 30_000, `the host program's pids: ${out}`);
    const [program, child] = out.trim().split(/\s+/).map(Number) as [number, number];
    return { pids: { program, child }, keepAlive, waited };
  }
});

function sha1(file: string): string {
  return createHash("sha1").update(readFileSync(file)).digest("hex");
}

/**
 * A host program's own child: ended with it on Windows (taskkill /T); Wine's
 * taskkill has no /T, so there it outlives its parent and is ended here.
 */
async function treeEnded(t: TestContext, child: number): Promise<void> {
  if (!underWine) return gone(child, "the host program's child");
  wineDiffers(t, "taskkill has no /T here, so a host program's own child outlives it; Windows ends the tree");
  try {
    process.kill(child);
  } catch {
    // gone
  }
}

/** Connects to the pod side of the proxy, lets `drive` talk, and collects what comes back until the end. */
function exchange(host: string, port: number, drive: (c: Socket) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = connect({ host, port, allowHalfOpen: true });
    const got: Buffer[] = [];
    const timer = setTimeout(() => {
      c.destroy();
      reject(new Error(`no end within 20 s; got ${JSON.stringify(Buffer.concat(got).toString())}`));
    }, 20_000);
    c.on("data", (d: Buffer) => got.push(d));
    c.on("end", () => {
      clearTimeout(timer);
      resolve(Buffer.concat(got).toString());
    });
    c.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    c.once("connect", () => drive(c));
  });
}
