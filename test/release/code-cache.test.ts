/**
 * A bundle's text reaches V8 as written: read as Latin-1 when it is ASCII (the
 * fast path), as UTF-8 otherwise, through the code-cache path of runBundle.
 * The cache directory stays bounded: entries are marked as they are used, and
 * pruned to the most recently used.
 */
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  BUNDLE_HEAD,
  BUNDLE_TAIL,
  MAX_ENTRIES,
  MAX_IDLE_DAYS,
  cacheEntry,
  cacheKeyDigest,
  pruneCodeCache,
  runBundle,
} from "../../agent/release/code-cache";
import { AGENT_NODE_FLAGS } from "../../agent/common";
import { scratchDir } from "../support";

const scratch = scratchDir("winfleet-code-cache-");

const seen = globalThis as { winfleetCodeCacheTest?: string };

/**
 * Runs `lib` through the code-cache path (the test runner's loader turns source maps on, which sends runBundle to
 * Node's own loader).
 */
function runCached(lib: string, command: string, cache: string): ReturnType<typeof runBundle> {
  const maps = process.sourceMapsEnabled;
  process.setSourceMapsEnabled(false);
  try {
    return runBundle(lib, command, { WINFLEET_CODE_CACHE: cache });
  } finally {
    process.setSourceMapsEnabled(maps);
  }
}

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** Sets a file's modification time to `ago` ms before now. */
const age = (path: string, ago: number): void =>
  utimesSync(path, new Date(Date.now() - ago), new Date(Date.now() - ago));
const entryName = (i: number): string => `${i.toString(16).padStart(32, "0")}.bin`;

describe("runBundle", () => {
  // Written as the file's own text: an escape in an ASCII file, the characters themselves in a UTF-8 one.
  const cases = [
    {
      what: "ASCII",
      source: 'globalThis.winfleetCodeCacheTest = "plain \\u00e9 escaped";\n',
      expected: "plain \u00e9 escaped",
    },
    {
      what: "UTF-8",
      source: 'globalThis.winfleetCodeCacheTest = "h\u00e9llo \u2713 \u{1f680}";\n',
      expected: "h\u00e9llo \u2713 \u{1f680}",
    },
  ];
  for (const { what, source, expected } of cases) {
    it(`runs a bundle written in ${what} with its strings intact`, () => {
      const lib = join(scratch, `${what}.js`);
      writeFileSync(lib, source, "utf8");
      assert.equal(runCached(lib, `test-${what}`, join(scratch, "cache")), "missing", "through the code-cache path");
      assert.equal(seen.winfleetCodeCacheTest, expected);
    });
  }
});

describe("a bundle the build made (BUNDLE_HEAD ... BUNDLE_TAIL)", () => {
  // What the module sees of itself: its this, its module, its require and where it is.
  const body =
    "globalThis.winfleetCodeCacheTest = JSON.stringify({ self: this === module.exports, filename: __filename, dirname: __dirname, require: typeof require('node:path').join, line: new Error().stack.split('\\n')[1].replace(/.*:(\\d+):\\d+\\)?$/, '$1') });\nmodule.exports.ran = true;";
  it("runs the same compiled by the entry (no cache, then cached) as required by Node, on its own lines", () => {
    const lib = join(scratch, "built", "lib.js");
    mkdirSync(join(scratch, "built"), { recursive: true });
    writeFileSync(lib, `${BUNDLE_HEAD}\n${body}\n${BUNDLE_TAIL}\n`);
    const expected = JSON.stringify({
      self: true,
      filename: lib,
      dirname: join(scratch, "built"),
      require: "function",
      line: "2",
    });
    const cache = join(scratch, "built-cache");
    // Each run in a process of its own: the entry is written as the process exits. (tsx turns source
    // maps on, which sends runBundle to Node's own loader.)
    const runner = `process.setSourceMapsEnabled(false); const use = require(${JSON.stringify(join(__dirname, "..", "..", "agent", "release", "code-cache"))}).runBundle(${JSON.stringify(lib)}, "built", { WINFLEET_CODE_CACHE: ${JSON.stringify(cache)} }); console.log(JSON.stringify([use, globalThis.winfleetCodeCacheTest]));`;
    const uses: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = spawnSync(process.execPath, ["--import", "tsx", "-e", runner], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      const [use, got] = JSON.parse(r.stdout) as [string, string];
      uses.push(use);
      assert.equal(got, expected, `through the code cache (${use})`);
    }
    assert.deepEqual(uses, ["missing", "consumed"]);
    seen.winfleetCodeCacheTest = undefined;
    assert.deepEqual(createRequire(lib)(lib), { ran: true });
    assert.equal(seen.winfleetCodeCacheTest, expected, "required by Node");
  });
});

describe("a bundle run with and without the service's Node options", () => {
  it("keeps an entry for each, so neither rejects and rewrites the other's", () => {
    const lib = join(scratch, "flags", "lib.js");
    mkdirSync(join(scratch, "flags"), { recursive: true });
    writeFileSync(lib, `${BUNDLE_HEAD}\nglobalThis.winfleetCodeCacheTest = "flags";\n${BUNDLE_TAIL}\n`);
    const cache = join(scratch, "flags-cache");
    const runner = `process.setSourceMapsEnabled(false); console.log(require(${JSON.stringify(join(__dirname, "..", "..", "agent", "release", "code-cache"))}).runBundle(${JSON.stringify(lib)}, "flags", { WINFLEET_CODE_CACHE: ${JSON.stringify(cache)} }));`;
    const uses: string[] = [];
    // V8 counts a heap option among the flags a cache must match: the service's runs and a hand-started one take turns.
    for (const flags of [[], AGENT_NODE_FLAGS, [], AGENT_NODE_FLAGS]) {
      const r = spawnSync(process.execPath, [...flags, "--import", "tsx", "-e", runner], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      uses.push(r.stdout.trim());
    }
    assert.deepEqual(uses, ["missing", "missing", "consumed", "consumed"]);
  });
});

describe("a part of a bundle (a file of its own the bundle requires)", () => {
  it("runs through the code cache as the bundle does, once however often it is required", () => {
    const dir = join(scratch, "parts");
    mkdirSync(dir, { recursive: true });
    const lib = join(dir, "lib.js");
    writeFileSync(
      join(dir, "part.js"),
      `${BUNDLE_HEAD}\nmodule.exports.runs = (globalThis.partRuns = (globalThis.partRuns ?? 0) + 1);\n${BUNDLE_TAIL}\n`,
    );
    writeFileSync(
      lib,
      `${BUNDLE_HEAD}\nconst a = require("./part.js"), b = require("./part.js");\nglobalThis.winfleetCodeCacheTest = JSON.stringify({ same: a === b, runs: a.runs, byNode: require.cache[${JSON.stringify(join(dir, "part.js"))}] !== undefined, path: typeof require("node:path").join });\n${BUNDLE_TAIL}\n`,
    );
    const cache = join(scratch, "parts-cache");
    const runner = `process.setSourceMapsEnabled(false); require(${JSON.stringify(join(__dirname, "..", "..", "agent", "release", "code-cache"))}).runBundle(${JSON.stringify(lib)}, "parts", { WINFLEET_CODE_CACHE: ${JSON.stringify(cache)} }); console.log(globalThis.winfleetCodeCacheTest);`;
    for (let i = 0; i < 2; i++) {
      const r = spawnSync(process.execPath, ["--import", "tsx", "-e", runner], { encoding: "utf8" });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { same: true, runs: 1, byNode: false, path: "function" });
      assert.equal(readdirSync(cache).length, 2, "an entry for the bundle and one for its part");
    }
  });
});

describe("the code cache's size", () => {
  it("marks an entry used as it is read, at most once a day, so a start writes nothing it need not", () => {
    const cache = join(scratch, "marks");
    const lib = join(scratch, "marked.js");
    writeFileSync(lib, "globalThis.winfleetCodeCacheTest = 'marked';\n");
    mkdirSync(cache, { recursive: true });
    const entry = cacheEntry(cache, lib, "mark");
    writeFileSync(entry, "not bytecode: read, then rejected by V8");
    age(entry, 3 * DAY);
    assert.equal(runCached(lib, "mark", cache), "rejected");
    assert.ok(Date.now() - statSync(entry).mtimeMs < 10 * MINUTE, "an entry last marked 3 days ago is marked now");
    age(entry, 2 * 60 * MINUTE);
    const before = statSync(entry).mtimeMs;
    runCached(lib, "mark", cache); // V8's in-memory cache now holds this source: the entry is read, not consulted
    assert.equal(seen.winfleetCodeCacheTest, "marked");
    assert.equal(statSync(entry).mtimeMs, before, "one marked 2 hours ago is left as it is");
  });

  it("keeps the most recently used entries, drops idle ones and a killed writer's temp files, and nothing else", () => {
    const cache = join(scratch, "prune");
    mkdirSync(cache, { recursive: true });
    const write = (name: string, ago: number): string => {
      const path = join(cache, name);
      writeFileSync(path, "x");
      age(path, ago);
      return path;
    };
    // Entries used 1..MAX_ENTRIES+6 minutes ago, one idle too long, and the one just written (marked long ago).
    const recent = Array.from({ length: MAX_ENTRIES + 6 }, (_, i) => write(entryName(i + 1), (i + 1) * MINUTE));
    const idle = write(entryName(999), (MAX_IDLE_DAYS + 1) * DAY);
    const keep = write(entryName(1000), (MAX_IDLE_DAYS + 10) * DAY);
    const killedWriter = write(`${entryName(1001)}.0a1b2c3d.tmp`, 2 * 60 * MINUTE);
    const writing = write(`${entryName(1002)}.0a1b2c3d.tmp`, MINUTE);
    const foreign = ["notes.txt", "x.bin", `${entryName(1003)}.old`].map((name) => write(name, 400 * DAY));
    pruneCodeCache(cache, keep);
    const left = new Set(readdirSync(cache).map((name) => join(cache, name)));
    const expected = [...recent.slice(0, MAX_ENTRIES - 1), keep, writing, ...foreign];
    assert.deepEqual([...left].sort(), expected.sort());
    assert.ok(!left.has(idle) && !left.has(killedWriter));
  });
});

describe("cache entry names", () => {
  it("are 32 hex digits, the same for the same key, and differ for keys a byte, a field or an mtime apart", () => {
    const base = [
      "/opt/winfleet/current/lib/winfleet-agent.js",
      1356800,
      1764040000123.456,
      "v20.20.2",
      "x64",
      "serve",
    ].join("\0");
    assert.match(cacheKeyDigest(base), /^[0-9a-f]{32}$/);
    assert.equal(cacheKeyDigest(base), cacheKeyDigest(`${base}`));
    const keys = new Set<string>();
    for (let i = 0; i < 20_000; i++) keys.add(base.replace("1764040000123.456", String(1764040000123.456 + i)));
    for (const command of ["", "apply", "broker", "--version", "ignition"]) keys.add(base.replace("serve", command));
    for (let i = 0; i < base.length; i++)
      keys.add(base.slice(0, i) + String.fromCharCode(base.charCodeAt(i) ^ 1) + base.slice(i + 1));
    const names = new Set([...keys].map(cacheKeyDigest));
    assert.ok(keys.size > 20_000);
    assert.equal(names.size, keys.size, "every key its own name");
  });
});
