/**
 * Running a bundle through V8's code cache. Compiling the agent's 2.5 MB of
 * JavaScript is most of what a bare start costs beyond Node itself; with the
 * bytecode of an earlier start the compile all but disappears (on one slow
 * run here, 60–80 ms of compiling became 10 ms of reading the cache). A
 * bundle's `bin/` entry calls {@link runBundle} on its `lib/` file.
 *
 * The cache is per user, never inside the (signed) bundle: `$XDG_CACHE_HOME/
 * winfleet/code-cache` (default `~/.cache/...`) on Linux, `%LOCALAPPDATA%\
 * winfleet\code-cache` on Windows (for the SYSTEM service, its own profile), or
 * `WINFLEET_CODE_CACHE=<dir>`; `WINFLEET_CODE_CACHE=off` turns it off. On
 * POSIX a directory another user could write to is not used: a cache is code.
 * Entries are keyed by the bundle file (path, size, mtime), Node's version
 * and the command (so the idle broker does not carry the bytecode `apply`
 * compiled); V8 itself rejects an entry whose source length, V8 version or
 * flags differ, and the entry is then rewritten. Nothing here can make a run
 * fail: any problem with the cache means an ordinary compile.
 */
import { isAscii } from "node:buffer";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { Script } from "node:vm";
import { IMPORT_EXTERNAL } from "../common/import-external";

/** How a run used the cache. */
export type CacheUse = "off" | "missing" | "consumed" | "rejected";

/** The cache directory for this user, or undefined when caching is off or unsafe. */
export function codeCacheDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | undefined {
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

/** The cache entry for `lib` run as `command`. */
export function cacheEntry(dir: string, lib: string, command: string): string {
  const s = statSync(lib);
  const key = [realpathSync(lib), s.size, s.mtimeMs, process.version, process.arch, command].join("\0");
  return join(dir, `${createHash("sha256").update(key).digest("hex").slice(0, 32)}.bin`);
}

/**
 * A bundle's text. The build keeps bundles pure ASCII (build.ts `assertAscii`), and an ASCII
 * file read as Latin-1 is the same string, made by a plain copy: less than half the time of
 * Node's UTF-8 decoding of the 2.5 MB agent bundle (4.5 ms against 10.9 ms here), on every
 * start. A file that is not ASCII after all is decoded as UTF-8, as Node would.
 */
function readSource(lib: string): string {
  const bytes = readFileSync(lib);
  return isAscii(bytes) ? bytes.toString("latin1") : bytes.toString("utf8");
}

// The module wrapper on a line of its own, so line numbers inside stay those of the file.
const WRAP_HEAD = "(function (exports, require, module, __filename, __dirname) {\n";
const WRAP_TAIL = "\n})";

/**
 * Runs the CommonJS file `lib` as a module, through the code cache when one is
 * configured and usable; `command` names the entry in the cache.
 */
export function runBundle(lib: string, command: string, env: NodeJS.ProcessEnv = process.env): CacheUse {
  const dir = codeCacheDir(env);
  // Source maps (--enable-source-maps) apply to modules Node loads itself.
  if (dir === undefined || process.sourceMapsEnabled || !usableDir(dir)) {
    createRequire(lib)(lib);
    return "off";
  }
  const entry = cacheEntry(dir, lib, command);
  let cached: Buffer | undefined;
  try {
    cached = readFileSync(entry);
  } catch {
    cached = undefined;
  }
  const source = readSource(lib);
  const script = new Script(WRAP_HEAD + source + WRAP_TAIL, {
    filename: lib,
    lineOffset: -1,
    ...(cached ? { cachedData: cached } : {}),
  });
  const use: CacheUse = cached === undefined ? "missing" : script.cachedDataRejected === true ? "rejected" : "consumed";
  if (use !== "consumed") {
    // At exit the cache holds every function this run compiled, not just the top level.
    process.once("exit", () => {
      const temp = `${entry}.${randomBytes(4).toString("hex")}.tmp`;
      try {
        writeFileSync(temp, script.createCachedData(), { mode: 0o600 });
        renameSync(temp, entry);
      } catch {
        rmSync(temp, { force: true });
      }
    });
  }
  // import() inside a vm.Script has no loader; the bundle reaches this one (agent/common/import-external.ts).
  (globalThis as { [IMPORT_EXTERNAL]?: (s: string) => Promise<unknown> })[IMPORT_EXTERNAL] = (s) => import(s);
  const wrapper = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
  const module = { exports: {}, filename: lib, id: lib, loaded: false };
  wrapper.call(module.exports, module.exports, createRequire(lib), module, lib, dirname(lib));
  module.loaded = true;
  return use;
}
