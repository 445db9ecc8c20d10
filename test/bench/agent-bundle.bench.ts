/**
 * What the single-file agent bundle costs, each against a baseline measured in
 * the same run: `winfleet-agent --version` start time vs `node -e 0` (goal
 * ≤ 1.5×), cold (no code cache) and warm; and idle RSS with the broker serving
 * vs an idle bare `node` (goal ≤ 1.15×), from the bundle (its code cache warm,
 * as on every start of a node's service but the first, and on that first
 * start) and from the sources through tsx — with, for what bounds it, the RSS
 * of bare `node` serving only an HTTP/2 server, and only an empty grpc-js
 * server, on a Unix socket: the least any wins-compatible gRPC server in Node
 * holds; bare `node` that compiles the bundle without running it (what its
 * source costs before any module runs, read as the bundle's entry reads it);
 * and the bundle's broker with glibc told to hand freed memory back
 * (`MALLOC_TRIM_THRESHOLD_=0`), which shows how much is memory freed but kept
 * by the allocator; and with V8's optimizing compiler off (`--no-opt`).
 * Settled RSS is also printed split into private and file-backed pages.
 *
 * Each process is sampled twice: 4 s after it starts, and settled, 15 s after
 * it starts. V8 shrinks the heap it grew while starting (new space, freed
 * pages) only once its memory reducer runs, 8 s after the last full GC; a
 * service is idle for hours, so the settled figure is the one the goal is
 * read against, and the 4 s one shows what start-up leaves behind until then.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AGENT_NODE_FLAGS } from "../../agent/common";
import { buildBundles } from "../../agent/release/build";
import { goal, interleavedMedianMs, medianMs, report } from "./harness";

const REPO = join(__dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "bench-bundle-"));

/** A process's resident memory in MB: all of it, and split into private (anonymous) and file-backed pages. */
interface Resident {
  readonly rss: number;
  /** RssAnon: the process's own memory (heaps, JIT code, buffers). */
  readonly anon: number;
  /** RssFile: pages of the node binary and its libraries, shared with every other process mapping them. */
  readonly file: number;
}

function resident(pid: number): Resident {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const mb = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: mb("VmRSS"), anon: mb("RssAnon"), file: mb("RssFile") };
}

/** When a process's RSS is sampled, in ms after it starts. */
const EARLY_MS = 4000;
const SETTLED_MS = 15_000;

/** RSS in MB of an idle process 4 s after it starts and settled (see the file comment); returns once it has exited. */
async function idleRss(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ early: number; settled: number; split: Resident }> {
  const child = spawn(process.execPath, args, {
    cwd: REPO,
    stdio: "ignore",
    env: { ...process.env, WINFLEET_CODE_CACHE: join(work, "cache"), ...env },
  });
  const exited = new Promise((r) => child.once("exit", r));
  try {
    await new Promise((r) => setTimeout(r, EARLY_MS));
    const early = resident(child.pid ?? 0).rss;
    await new Promise((r) => setTimeout(r, SETTLED_MS - EARLY_MS));
    const split = resident(child.pid ?? 0);
    return { early, settled: split.rss, split };
  } finally {
    // A broker writes its code cache as it stops, and frees its sockets for the next one.
    child.kill();
    await exited;
  }
}

void (async () => {
  try {
    await buildBundles(REPO, join(work, "dist"));
    const bin = join(work, "dist", "agent", "bin", "winfleet-agent.js");
    const run =
      (args: readonly string[], env: Record<string, string> = {}) =>
      () =>
        spawnSync(process.execPath, args, { env: { ...process.env, ...env } });
    run([bin, "--version"], { WINFLEET_CODE_CACHE: join(work, "cache") })();
    // Taking turns run by run: a machine that slows down mid-benchmark weighs on all three alike.
    const [bare = NaN, warm = NaN, cold = NaN] = await interleavedMedianMs(21, [
      run(["-e", "0"]),
      run([bin, "--version"], { WINFLEET_CODE_CACHE: join(work, "cache") }),
      run([bin, "--version"], { WINFLEET_CODE_CACHE: "off" }),
    ]);
    const source = await medianMs(
      5,
      run([join(REPO, "bin", "winfleet-agent.js"), "--version"], { WINFLEET_LAUNCH: "source" }),
    );
    report("--version, code cache warm", { name: "bundle", ms: warm }, { name: "node -e 0", ms: bare });
    report("--version, no code cache", { name: "bundle", ms: cold }, { name: "node -e 0", ms: bare });
    report("--version, from sources", { name: "tsx   ", ms: source }, { name: "node -e 0", ms: bare });
    goal("--version start, code cache warm", `${(warm / bare).toFixed(2)}x node -e 0`, "<= 1.5x", warm <= 1.5 * bare);

    const config = join(work, "broker.yaml");
    writeFileSync(config, `listen: ${work}/w.sock\nproxy: ${work}/p.sock\nstateDir: ${work}/state\nallowAll: true\n`);
    const idle = await idleRss(["-e", "setInterval(() => {}, 1000)"]);
    // A node's service starts with its code cache warm on every start but its first; the first
    // start compiles the bundle itself, and writes the cache as it stops.
    // With the Node options the service definitions start it with.
    const firstStart = await idleRss([...AGENT_NODE_FLAGS, bin, "broker", "--config", config]);
    const bundled = await idleRss([...AGENT_NODE_FLAGS, bin, "broker", "--config", config]);
    const fromSource = await idleRss([join(REPO, "bin", "winfleet-agent.js"), "broker", "--config", config], {
      WINFLEET_LAUNCH: "source",
    });
    const http2Only = await idleRss([
      "-e",
      `require("node:http2").createServer().listen(${JSON.stringify(join(work, "h2.sock"))})`,
    ]);
    const grpcOnly = await idleRss([
      "-e",
      `const g = require("@grpc/grpc-js"); new g.Server().bindAsync("unix:${join(work, "g.sock")}", g.ServerCredentials.createInsecure(), () => {})`,
    ]);
    const compileOnly = await idleRss([
      "-e",
      `const s = require("node:fs").readFileSync(${JSON.stringify(join(work, "dist", "agent", "lib", "winfleet-agent.js"))}, "latin1"); new (require("node:vm").Script)("(function(){" + s + "\\n})"); setInterval(() => {}, 1000)`,
    ]);
    const trimmed = await idleRss([...AGENT_NODE_FLAGS, bin, "broker", "--config", config], {
      MALLOC_TRIM_THRESHOLD_: "0",
    });
    // V8 refuses a code cache made under other flags: the first run writes one of its own, the second reads it.
    const noOptRun = () =>
      idleRss(["--no-opt", bin, "broker", "--config", config], { WINFLEET_CODE_CACHE: join(work, "cache-no-opt") });
    await noOptRun();
    const noOpt = await noOptRun();
    const sampled = {
      settled: `settled, ${SETTLED_MS / 1000} s after start (after V8's memory reducer)`,
      early: `early, ${EARLY_MS / 1000} s after start`,
    };
    for (const when of ["settled", "early"] as const) {
      console.log(`idle RSS, broker serving: ${sampled[when]}`);
      const node = { name: "bare node", ms: idle[when] };
      const line = (label: string, name: string, rss: { early: number; settled: number }): void =>
        report(label, { name, ms: rss[when] }, node, "MB");
      line("  broker, bundle", "bundle", bundled);
      line("  broker, first start", "cold  ", firstStart);
      line("  broker, sources", "tsx   ", fromSource);
      line("  broker, bundle, trimmed", "trim  ", trimmed);
      line("  broker, bundle, --no-opt", "no-opt", noOpt);
      line("  floor: empty HTTP/2 server", "http2 ", http2Only);
      line("  floor: empty grpc-js server", "grpc  ", grpcOnly);
      line("  floor: bundle compiled", "parse ", compileOnly);
    }
    console.log("idle RSS, settled, by kind: private (RssAnon) | the node binary's and libraries' pages (RssFile)");
    for (const [label, name, rss] of [
      ["  broker", "bundle", bundled],
      ["  broker --no-opt", "no-opt", noOpt],
      ["  HTTP/2 floor", "http2 ", http2Only],
      ["  grpc-js floor", "grpc  ", grpcOnly],
    ] as const) {
      report(`${label}, private`, { name, ms: rss.split.anon }, { name: "bare node", ms: idle.split.anon }, "MB");
      report(`${label}, file-backed`, { name, ms: rss.split.file }, { name: "bare node", ms: idle.split.file }, "MB");
    }
    console.log("  (bundle: code cache warm, as every start but a node's first; first start: no code cache yet;");
    console.log(
      "   trimmed: the bundle, warm, with MALLOC_TRIM_THRESHOLD_=0; compiled: bare node that compiles the bundle, running none of it;",
    );
    console.log(
      "   --no-opt: the bundle, warm, with V8's optimizing compiler off: what its first optimization costs, code paged in",
    );
    console.log(
      "   from the node binary and the compiler's memory, which a broker pays once any function of it runs hot)",
    );
    goal(
      "idle RSS, broker serving, settled",
      `${bundled.settled.toFixed(1)} MB, ${(bundled.settled / grpcOnly.settled).toFixed(2)}x an empty grpc-js server (${grpcOnly.settled.toFixed(1)} MB)`,
      "<= 1.05x the floor",
      bundled.settled <= 1.05 * grpcOnly.settled,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
})();
