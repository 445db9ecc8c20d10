/**
 * Running a bundle through V8's code cache. Compiling the agent's 1.3 MB of
 * JavaScript is most of what a bare start costs beyond Node itself; with the
 * bytecode of an earlier start the compile all but disappears (`--version`:
 * 1.8-2.1x `node -e 0` without the cache, 1.33-1.48x with it). A
 * bundle's `bin/` entry calls {@link runBundle} on its `lib/` file.
 *
 * The cache is per user, never inside the (signed) bundle: `$XDG_CACHE_HOME/
 * winfleet/code-cache` (default `~/.cache/...`) on Linux, `%LOCALAPPDATA%\
 * winfleet\code-cache` on Windows (for the SYSTEM service, its own profile), or
 * `WINFLEET_CODE_CACHE=<dir>`; `WINFLEET_CODE_CACHE=off` turns it off. On
 * POSIX a directory another user could write to is not used: a cache is code.
 * Entries are keyed by the bundle file (path, size, mtime), Node's version,
 * the command (so the idle broker does not carry the bytecode `apply`
 * compiled) and Node's options (the service starts with a heap option, which
 * V8 counts among the flags its cache must match: one key for both would be
 * rejected and rewritten by turns); V8 itself rejects an entry whose source
 * length, V8 version or flags differ, and the entry is then rewritten.
 * Nothing here can make a run fail: any problem with the cache means an
 * ordinary compile.
 *
 * Every build of a bundle, in every place it is installed, gets entries of its
 * own (0.2–2 MB each, one per command run), so a node that upgrades its agent
 * weekly would otherwise gather them for good. Each write therefore prunes
 * the directory to the entries used in the last {@link MAX_IDLE_DAYS} days, at
 * most {@link MAX_ENTRIES} of them, the most recently used kept: an entry's
 * modification time is its last use, refreshed at most once a day as it is
 * read, so a start writes nothing to the disk it did not have to.
 */
import { isAscii } from "node:buffer";
import {
  closeSync,
  existsSync,
  fstatSync,
  futimesSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { Script } from "node:vm";
import { IMPORT_EXTERNAL } from "../common/import-external";

/** How a run used the cache. */
export type CacheUse = "off" | "missing" | "consumed" | "rejected";

/** The cache directory for this user, or undefined when caching is off or unsafe. */
export function codeCacheDir(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const chosen = env.WINFLEET_CODE_CACHE;
  if (chosen === "off" || chosen === "0") return undefined;
  if (chosen) return chosen;
  if (platform === "win32") return env.LOCALAPPDATA ? join(env.LOCALAPPDATA, "winfleet", "code-cache") : undefined;
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "winfleet", "code-cache");
}

/** Creates `dir` (0700) and says whether only this user can write there. */
function usableDir(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (process.platform === "win32") return true; // the profile's ACL protects it
    const s = statSync(dir);
    return s.uid === process.getuid?.() && (s.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** How many entries a cache directory keeps (the most recently used). */
export const MAX_ENTRIES = 24;
/** An entry unused for longer than this is removed at the next write. */
export const MAX_IDLE_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;
/** A temp file this old is a killed writer's, not one being written. */
const STALE_TEMP_MS = 60 * 60 * 1000;
/** The names this module writes: entries, and their temp files while being written ({@link tempFor}). */
const ENTRY_NAME = /^[0-9a-f]{32}\.bin$/;
const TEMP_NAME = /^[0-9a-f]{32}\.bin\.[0-9a-f]{8}\.tmp$/;
// Unique among concurrent writers is enough (the rename is atomic), so no crypto: a start does not load it.
const tempFor = (entry: string): string => `${entry}.${hex32(Math.floor(Math.random() * 2 ** 32))}.tmp`;
const hex32 = (n: number): string => (n >>> 0).toString(16).padStart(8, "0");

/**
 * A 128-bit digest of `text`: four FNV-1a lanes, each with its own seed and
 * prime, finished with murmur3's mix. It names cache entries, whose contents
 * V8 checks again, in a directory only this user writes; node:crypto's
 * SHA-256 would cost every start 4 ms of loading crypto and the streams.
 */
export function cacheKeyDigest(text: string): string {
  const seeds = [0x811c9dc5, 0x9e3779b9, 0x85ebca6b, 0xc2b2ae35];
  const primes = [0x01000193, 0x0100019d, 0x010001a9, 0x010001c1];
  const out: string[] = [];
  for (let lane = 0; lane < 4; lane++) {
    let h = seeds[lane]!;
    const p = primes[lane]!;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), p);
    h ^= text.length;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    out.push(hex32(h ^ (h >>> 16)));
  }
  return out.join("");
}

/** The cache entry for `lib` run as `command` by a Node started with `flags`. */
export function cacheEntry(
  dir: string,
  lib: string,
  command: string,
  flags: readonly string[] = process.execArgv,
): string {
  const s = statSync(lib);
  const key = [realpathSync(lib), s.size, s.mtimeMs, process.version, process.arch, command, ...flags].join("\0");
  return join(dir, `${cacheKeyDigest(key)}.bin`);
}

/** Sets an entry's modification time, which pruning reads as its last use. */
function markUsed(fd: number, entry: string, seconds: number): void {
  try {
    futimesSync(fd, seconds, seconds);
  } catch {
    // Windows sets times only through a handle opened to write attributes, which utimes opens.
    try {
      utimesSync(entry, seconds, seconds);
    } catch {
      // an entry this user cannot mark is still read; it is only pruned sooner
    }
  }
}

/**
 * An entry's bytes, or undefined when there is none; marks it used (its
 * modification time) when that mark is over a day old, through the
 * descriptor the read opened, so the usual start opens nothing more.
 */
function readEntry(entry: string, now: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(entry, "r");
  } catch {
    return undefined;
  }
  try {
    const bytes = readFileSync(fd);
    if (now - fstatSync(fd).mtimeMs > DAY_MS) markUsed(fd, entry, now / 1000);
    return bytes;
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes from the cache directory `dir` the entries unused for
 * {@link MAX_IDLE_DAYS} days, then all but the {@link MAX_ENTRIES} most
 * recently used, never `keep` (the entry just written); and temp files a
 * killed writer left. Only names this module writes are touched, so a
 * `WINFLEET_CODE_CACHE` pointed at a shared directory loses nothing else.
 */
export function pruneCodeCache(dir: string, keep: string, now = Date.now()): void {
  const entries: { path: string; used: number }[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const isEntry = ENTRY_NAME.test(name);
    if ((!isEntry && !TEMP_NAME.test(name)) || path === keep) continue;
    let used: number;
    try {
      used = statSync(path).mtimeMs;
    } catch {
      continue; // removed by another process meanwhile
    }
    if (!isEntry) {
      if (now - used > STALE_TEMP_MS) rmSync(path, { force: true });
    } else if (now - used > MAX_IDLE_DAYS * DAY_MS) {
      rmSync(path, { force: true });
    } else {
      entries.push({ path, used });
    }
  }
  entries.sort((a, b) => b.used - a.used);
  for (const { path } of entries.slice(MAX_ENTRIES - 1)) rmSync(path, { force: true });
}

/**
 * A bundle's text. The build keeps bundles pure ASCII (build.ts `assertAscii`), and an ASCII
 * file read as Latin-1 is the same string, made by a plain copy: less than half the time of
 * Node's UTF-8 decoding of the agent bundle (4.5 ms against 10.9 ms here, at 2.5 MB), on every
 * start. A file that is not ASCII after all is decoded as UTF-8, as Node would.
 */
function readSource(lib: string): string {
  const bytes = readFileSync(lib);
  return isAscii(bytes) ? bytes.toString("latin1") : bytes.toString("utf8");
}

/**
 * The first line of a bundle the build made (its banner), with {@link BUNDLE_TAIL}
 * its last: the module's code inside a function of CommonJS's parameters,
 * handed to an arrow that tells the two ways a bundle is run apart by
 * `arguments`, which arrows take from where they are written. Required as
 * a CommonJS module, the code sits in Node's module wrapper, has `arguments`,
 * and the arrow calls the function with the wrapper's own. Compiled here as a
 * script, there is no `arguments`, and the script's value is the function,
 * which {@link runBundle} calls. The function is in parentheses of its own,
 * V8's sign of a function about to be called: compiled at once rather than
 * pre-parsed first and parsed again when called (30 ms more on a start without
 * a code cache). So the file is the module V8 compiles: no
 * wrapper is concatenated around 1.3 MB of source, which V8 would then copy
 * into one flat string on every start (5 ms here).
 */
export const BUNDLE_HEAD =
  '(typeof arguments === "object" ? (f) => f.apply(this, arguments) : (f) => f)((function (exports, require, module, __filename, __dirname) {';
/** The last line of a bundle the build made (its footer); see {@link BUNDLE_HEAD}. */
export const BUNDLE_TAIL = "}));";

// Any other CommonJS file is wrapped here, on a line of its own, so line numbers inside stay those of the file.
const WRAP_HEAD = "(function (exports, require, module, __filename, __dirname) {\n";
const WRAP_TAIL = "\n})";

/**
 * A require of a file next to the bundle: a part the build split off (build.ts), such as the 30 MB that
 * `winfleet render` loads. It runs through the cache as the bundle does; Node's own require would compile
 * it anew at every start (0.3-0.4 s of CPU for the render's part).
 */
const PART = /^\.\/[^/\\]+\.js$/;

/**
 * Runs the CommonJS file `lib` as a module, through the code cache when one is
 * configured and usable; `command` names the entry in the cache. The parts it
 * requires go through the cache too, each with an entry of its own.
 */
export function runBundle(lib: string, command: string, env: NodeJS.ProcessEnv = process.env): CacheUse {
  return runModule(lib, command, env, new Map()).use;
}

interface Module {
  exports: unknown;
  readonly filename: string;
  readonly id: string;
  loaded: boolean;
}

function runModule(
  lib: string,
  command: string,
  env: NodeJS.ProcessEnv,
  parts: Map<string, Module>,
): { use: CacheUse; module: Module } {
  const dir = codeCacheDir(env);
  // Source maps (--enable-source-maps) apply to modules Node loads itself.
  if (dir === undefined || process.sourceMapsEnabled || !usableDir(dir)) {
    return { use: "off", module: { exports: createRequire(lib)(lib), filename: lib, id: lib, loaded: true } };
  }
  const entry = cacheEntry(dir, lib, command);
  const cached = readEntry(entry, Date.now());
  const source = readSource(lib);
  const built = source.startsWith(BUNDLE_HEAD);
  const script = new Script(built ? source : WRAP_HEAD + source + WRAP_TAIL, {
    filename: lib,
    lineOffset: built ? 0 : -1,
    ...(cached ? { cachedData: cached } : {}),
  });
  const use: CacheUse = cached === undefined ? "missing" : script.cachedDataRejected === true ? "rejected" : "consumed";
  if (use !== "consumed") {
    // At exit the cache holds every function this run compiled, not just the top level.
    process.once("exit", () => {
      const temp = tempFor(entry);
      try {
        writeFileSync(temp, script.createCachedData(), { mode: 0o600 });
        renameSync(temp, entry);
      } catch {
        rmSync(temp, { force: true });
        return;
      }
      try {
        pruneCodeCache(dir, entry);
      } catch {
        // an unreadable directory is pruned by a later write, or not at all
      }
    });
  }
  // import() inside a vm.Script has no loader; the bundle reaches this one (agent/common/import-external.ts).
  (globalThis as { [IMPORT_EXTERNAL]?: (s: string) => Promise<unknown> })[IMPORT_EXTERNAL] = (s) => import(s);
  const wrapper = script.runInThisContext() as (
    exports: unknown,
    require: NodeJS.Require,
    module: Module,
    filename: string,
    dirname: string,
  ) => void;
  const plain = createRequire(lib);
  const require = Object.assign((id: string): unknown => {
    const file = join(dirname(lib), id);
    if (!PART.test(id) || !existsSync(file)) return plain(id);
    // Registered before it runs, as Node does, so that a cycle gets the exports so far.
    return (parts.get(file) ?? runModule(file, `${command}:${id}`, env, parts).module).exports;
  }, plain);
  const module: Module = { exports: {}, filename: lib, id: lib, loaded: false };
  parts.set(lib, module);
  wrapper.call(module.exports, module.exports, require, module, lib, dirname(lib));
  module.loaded = true;
  return { use, module };
}
