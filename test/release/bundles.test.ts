/**
 * The single-file bundles (`npm run build`), built for real with esbuild: the
 * agent's, copied where no node_modules can be found and run (the lifecycle
 * engine end to end on the sandbox content, the code cache); the operator's,
 * rendering as the sources do; and the checkout launcher that runs a current
 * bundle and never a stale one.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { builtinModules } from "node:module";
import { basename, join } from "node:path";
import { before, describe, it } from "node:test";
import { assertAscii, buildBundles } from "../../agent/release/build";
import { LAZY_BUILTINS } from "../../agent/release/lazy-builtins";
import { scratchDir } from "../support";

const REPO = join(__dirname, "..", "..");
const scratch = scratchDir("winfleet-bundle-");

const node = (
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  cwd = scratch,
): { code: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, args, {
    cwd,
    encoding: "utf8",
    timeout: 60_000,
    env: { PATH: process.env.PATH ?? "", HOME: scratch, WINFLEET_CODE_CACHE: "off", ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

let out: string;
let shipped: string;
let bin: string;

before(async () => {
  out = join(scratch, "dist");
  await buildBundles(REPO, out);
  // Somewhere no node_modules is reachable, as on a node.
  shipped = join(scratch, "node-install", "current");
  cpSync(join(out, "agent"), shipped, { recursive: true });
  bin = join(shipped, "bin", "winfleet-agent.js");
});

describe("the agent bundle", () => {
  it("is one file with its source map, an entry, and the version it reports", () => {
    assert.deepEqual(readdirSync(shipped).sort(), ["bin", "lib", "package.json"]);
    assert.deepEqual(readdirSync(join(shipped, "lib")).sort(), ["winfleet-agent.js", "winfleet-agent.js.map"]);
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
    const v = node([bin, "--version"]);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(v.stdout.trim(), pkg.version);
    // Only Node's own modules, and the optional externals, are required at run time.
    const lib = readFileSync(join(shipped, "lib", "winfleet-agent.js"), "utf8");
    const required = new Set(
      [...lib.matchAll(/require\("([^"./][^"]*)"\)/g)].map((m) => m[1] as string).filter((m) => !m.startsWith("node:")),
    );
    const builtins = new Set<string>(builtinModules);
    const foreign = [...required].filter(
      (m) =>
        !builtins.has(m) &&
        !["tree-sitter", "tree-sitter-powershell", "@grpc/proto-loader"].some((x) => m === x || m.startsWith(`${x}/`)),
    );
    assert.deepEqual(foreign, [], "packages the bundle would need from node_modules");
    assert.ok(existsSync(join(out, ".build", "agent.json")));
  });

  it("starts --version without loading the built-ins only commands use (lazy-builtins.ts)", () => {
    const preload = join(scratch, "loaded.js");
    writeFileSync(
      preload,
      'process.on("exit", () => require("fs").writeFileSync(process.env.LOADED_OUT, process.moduleLoadList.join("\\n")));\n',
    );
    const loadedOut = join(scratch, "loaded.txt");
    // stdout to a file: a piped stdout is a net.Socket, which would load net itself.
    const stdout = openSync(join(scratch, "version.txt"), "w");
    const r = spawnSync(process.execPath, ["-r", preload, bin, "--version"], {
      stdio: ["ignore", stdout, "pipe"],
      env: { PATH: process.env.PATH ?? "", HOME: scratch, LOADED_OUT: loadedOut },
    });
    closeSync(stdout);
    assert.equal(r.status, 0, String(r.stderr));
    const loaded = readFileSync(loadedOut, "utf8").split("\n");
    assert.deepEqual(
      LAZY_BUILTINS.filter((m) => loaded.includes(`NativeModule ${m}`)),
      [],
    );
  });

  it("runs verify without loading what only the engine, the shells and the broker use (direct-imports.ts)", () => {
    const preload = join(scratch, "loaded.js");
    writeFileSync(
      preload,
      'process.on("exit", () => require("fs").writeFileSync(process.env.LOADED_OUT, process.moduleLoadList.join("\\n")));\n',
    );
    const loadedOut = join(scratch, "verify-loaded.txt");
    const root = join(scratch, "verify-root");
    mkdirSync(root, { recursive: true });
    const stdout = openSync(join(scratch, "verify.txt"), "w");
    const r = spawnSync(process.execPath, ["-r", preload, bin, "verify", "--root", root], {
      stdio: ["ignore", stdout, "pipe"],
      env: { PATH: process.env.PATH ?? "", HOME: scratch, LOADED_OUT: loadedOut },
    });
    closeSync(stdout);
    assert.equal(r.status, 0, String(r.stderr));
    assert.equal(readFileSync(join(scratch, "verify.txt"), "utf8"), "no drift: 0 paths as applied\n");
    // gRPC's http2 and net, the shells' child_process: a verify that loads them evaluates the whole engine.
    const loaded = readFileSync(loadedOut, "utf8").split("\n");
    assert.deepEqual(
      ["child_process", "dgram", "http", "http2", "https", "net", "tls"].filter((m) =>
        loaded.includes(`NativeModule ${m}`),
      ),
      [],
    );
  });

  it("is pure ASCII, and a build that would not be fails naming where", async () => {
    for (const file of [bin, join(shipped, "lib", "winfleet-agent.js"), join(out, "winfleet", "lib", "winfleet.js")]) {
      assert.ok(!/[\x80-\xff]/.test(readFileSync(file, "latin1")), `${file} holds a non-ASCII byte`);
    }
    // What esbuild's charset: "ascii" lets through: a character inside a regular expression literal.
    const slipped = join(out, "slipped.js");
    writeFileSync(slipped, 'var ok = "plain";\nvar RESERVED = /^com[0-9\u00b9]$/;\n');
    await assert.rejects(
      assertAscii(slipped),
      /slipped\.js:2: a non-ASCII character at byte 42, in ".*var RESERVED = \/\^com\[0-9\u00b9\]\$\/;\\n": write it as a \\u escape/,
    );
  });

  it("runs the lifecycle engine end to end with no node_modules: apply with its reboot, resume, verify, uninstall", () => {
    const content = join(scratch, "content-bundle");
    const built = spawnSync(
      process.execPath,
      [join(REPO, "bin", "winfleet.js"), "content", "build", "--out", content],
      { encoding: "utf8" },
    );
    assert.equal(built.status, 0, built.stderr);
    const root = join(scratch, "host");
    const apply = (): ReturnType<typeof node> =>
      node([
        bin,
        "apply",
        "--content",
        content,
        "--template",
        "sandbox@1.0.0",
        "--root",
        root,
        "--node-name",
        "bundled-1",
      ]);
    const first = apply();
    assert.equal(first.code, 194, `the sandbox's reboot (3010 arrives as 194): ${first.stderr}`);
    const second = apply();
    assert.equal(second.code, 0, second.stderr);
    const status = JSON.parse(node([bin, "status", "--root", root, "--json"]).stdout) as {
      template?: { name: string; version: string };
    };
    assert.deepEqual(status.template, { name: "sandbox", version: "1.0.0" });
    assert.equal(node([bin, "verify", "--root", root]).code, 0);
    writeFileSync(join(root, "winfleet", "sandbox", "bin", "write-config.sh"), "#!/bin/sh\n# edited\n");
    const drift = node([bin, "verify", "--root", root]);
    assert.equal(drift.code, 1, "drift found");
    assert.match(drift.stdout, /write-config\.sh/);
    const un = node([bin, "uninstall", "--root", root]);
    assert.equal(un.code, 0, un.stderr);
    assert.ok(!existsSync(join(root, "winfleet", "sandbox", "etc", "node.env")));
  });

  it("keeps compiled code in a private per-user cache, bounded, and runs whatever the cache holds", () => {
    const cache = join(scratch, "cache");
    assert.equal(node([bin, "--version"], { WINFLEET_CODE_CACHE: cache }).code, 0);
    const entries = readdirSync(cache).filter((f) => f.endsWith(".bin"));
    assert.equal(entries.length, 1);
    const entry = join(cache, entries[0] as string);
    assert.equal(statSync(entry).mode & 0o777, 0o600);
    assert.equal(node([bin, "--version"], { WINFLEET_CODE_CACHE: cache }).stdout.trim().length > 0, true);
    writeFileSync(entry, "not bytecode");
    const again = node([bin, "--version"], { WINFLEET_CODE_CACHE: cache });
    assert.equal(again.code, 0, "a corrupt cache entry is only a slower start");
    assert.notEqual(readFileSync(entry, "utf8"), "not bytecode", "and it is rewritten");
    // A write prunes: an entry of a build not run for 40 days goes, a file the cache did not write stays.
    const idle = join(cache, `${"0".repeat(31)}1.bin`);
    const foreign = join(cache, "README");
    for (const f of [idle, foreign]) {
      writeFileSync(f, "x");
      utimesSync(f, new Date(Date.now() - 40 * 86_400_000), new Date(Date.now() - 40 * 86_400_000));
    }
    assert.equal(node([bin, "status", "--help"], { WINFLEET_CODE_CACHE: cache }).code, 0);
    assert.equal(readdirSync(cache).filter((f) => f.endsWith(".bin")).length, 2, "--version's entry and status's");
    assert.ok(!existsSync(idle) && existsSync(foreign));
    const shared = join(scratch, "shared-cache");
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    assert.equal(node([bin, "--version"], { WINFLEET_CODE_CACHE: shared }).code, 0);
    assert.deepEqual(readdirSync(shared), [], "a directory others can write to is not used: a cache is code");
  });
});

describe("the checkout launcher", () => {
  // A checkout of its own: the launcher, one source file and a build whose record names it.
  function checkout(): { dir: string; source: string } {
    const dir = mkdtempSync(join(scratch, "checkout-"));
    cpSync(join(REPO, "bin", "launch.js"), join(dir, "bin", "launch.js"));
    cpSync(join(REPO, "bin", "winfleet-agent.js"), join(dir, "bin", "winfleet-agent.js"));
    cpSync(join(out, "agent"), join(dir, "dist", "agent"), { recursive: true });
    const source = join(dir, "agent", "cli", "agent-main.ts");
    mkdirSync(join(dir, "agent", "cli"), { recursive: true });
    writeFileSync(source, "// stands for the sources\n");
    const s = statSync(source);
    mkdirSync(join(dir, "dist", ".build"), { recursive: true });
    writeFileSync(
      join(dir, "dist", ".build", "agent.json"),
      JSON.stringify({
        format: 1,
        bundle: "agent/bin/winfleet-agent.js",
        inputs: { "agent/cli/agent-main.ts": { size: s.size, mtimeMs: s.mtimeMs } },
      }),
    );
    return { dir, source };
  }

  it("runs the bundle with WINFLEET_LAUNCH=bundle while it is as new as its sources, and refuses it once a source changed", () => {
    const { dir, source } = checkout();
    const agent = join(dir, "bin", "winfleet-agent.js");
    const fresh = node([agent, "--version"], { WINFLEET_LAUNCH: "bundle" });
    assert.equal(fresh.code, 0, fresh.stderr);
    const later = new Date(Date.now() + 5_000);
    utimesSync(source, later, later);
    const stale = node([agent, "--version"], { WINFLEET_LAUNCH: "bundle" });
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /cannot run the agent bundle: agent\/cli\/agent-main\.ts changed/);
    rmSync(join(dir, "dist"), { recursive: true });
    assert.match(
      node([agent, "--version"], { WINFLEET_LAUNCH: "bundle" }).stderr,
      /dist\/agent\/bin\/winfleet-agent\.js does not exist \(run npm run build\)/,
    );
    assert.equal(node([agent, "--version"], { WINFLEET_LAUNCH: "sometimes" }).code, 2);
  });

  it("runs a current bundle by default and the sources once it is stale or when asked to", () => {
    const { dir, source } = checkout();
    // The checkout's sources run through tsx, from the repository's packages.
    symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
    writeFileSync(source, 'process.stdout.write("from the sources\\n");\n');
    const s = statSync(source);
    writeFileSync(
      join(dir, "dist", ".build", "agent.json"),
      JSON.stringify({
        format: 1,
        bundle: "agent/bin/winfleet-agent.js",
        inputs: { "agent/cli/agent-main.ts": { size: s.size, mtimeMs: s.mtimeMs } },
      }),
    );
    const agent = join(dir, "bin", "winfleet-agent.js");
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
    assert.equal(node([agent, "--version"]).stdout.trim(), pkg.version, "the bundle, which is current");
    assert.equal(node([agent, "--version"], { WINFLEET_LAUNCH: "source" }).stdout, "from the sources\n");
    const later = new Date(Date.now() + 5_000);
    utimesSync(source, later, later);
    const stale = node([agent, "--version"]);
    assert.equal(stale.stdout, "from the sources\n", stale.stderr);
  });
});

describe("the operator bundle", () => {
  const winfleet = (): string => join(out, "winfleet", "bin", "winfleet.js");

  it("needs only native packages from node_modules, each only for the command that uses it", () => {
    assert.deepEqual(readdirSync(join(out, "winfleet", "lib")).sort(), [
      "winfleet-render.js",
      "winfleet-render.js.map",
      "winfleet.js",
      "winfleet.js.map",
    ]);
    for (const file of ["winfleet.js", "winfleet-render.js"]) {
      const lib = readFileSync(join(out, "winfleet", "lib", file), "utf8");
      // (Pulumi's closure serialiser writes require("${...}") into the code it generates: text, not a require.)
      const required = new Set(
        [...lib.matchAll(/require\("([^"./$][^"]*)"\)/g)]
          .map((m) => m[1] as string)
          .filter((m) => !m.startsWith("node:")),
      );
      const builtins = new Set<string>(builtinModules);
      const foreign = [...required].filter(
        (m) =>
          !builtins.has(m) &&
          !["tree-sitter", "tree-sitter-powershell", "@grpc/proto-loader", "esbuild", "encoding"].some(
            (x) => m === x || m.startsWith(`${x}/`),
          ),
      );
      assert.deepEqual(foreign, [], `packages ${file} would need from node_modules`);
    }
    const main = readFileSync(join(out, "winfleet", "lib", "winfleet.js"), "utf8");
    assert.match(main, /require\("\.\/winfleet-render\.js"\)/, "render is a file of its own");
    assert.ok(!main.includes("@pulumi/azure-native"), "Pulumi stays out of the main file");
    const v = node([winfleet(), "--version"]);
    assert.equal(v.code, 0, v.stderr);
    assert.equal(
      v.stdout.trim(),
      (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version,
    );
  });

  it("checks PowerShell with the checkout's tree-sitter, whether its code cache is being written or read", () => {
    const cache = join(scratch, "operator-cache");
    const bad = join(scratch, "bad-content");
    cpSync(join(REPO, "content"), bad, { recursive: true });
    const script = readdirSync(bad, { recursive: true, encoding: "utf8" }).find((f) => f.endsWith(".ps1"));
    assert.ok(script, "the content has PowerShell");
    writeFileSync(join(bad, script), "function Broken {\n  if ($x -eq 1 {\n}\n");
    for (const round of ["missing", "consumed"]) {
      const good = node(
        [winfleet(), "content", "validate", "--content", join(REPO, "content")],
        { WINFLEET_CODE_CACHE: cache },
        REPO,
      );
      assert.equal(good.code, 0, `${round}: ${good.stderr}`);
      assert.doesNotMatch(good.stdout + good.stderr, /PowerShell syntax not checked/, round);
      const broken = node([winfleet(), "content", "validate", "--content", bad], { WINFLEET_CODE_CACHE: cache }, REPO);
      assert.equal(broken.code, 1, `${round}: ${broken.stderr}`);
      assert.match(broken.stdout + broken.stderr, new RegExp(basename(script).replace(".", "\\.")), round);
    }
    assert.equal(
      readdirSync(cache).filter((f) => f.endsWith(".bin")).length,
      1,
      "one entry, written by the first run, read by the second",
    );
  });

  it("renders a stack of the checkout byte for byte as the sources do", () => {
    const fromBundle = join(scratch, "render-bundle");
    const fromSources = join(scratch, "render-sources");
    const a = node([winfleet(), "render", "--stack", "byoh", "--out", fromBundle], {}, REPO);
    assert.equal(a.code, 0, a.stderr);
    const b = spawnSync(
      process.execPath,
      [join(REPO, "bin", "winfleet.js"), "render", "--stack", "byoh", "--out", fromSources],
      { cwd: REPO, encoding: "utf8", env: { ...process.env, WINFLEET_LAUNCH: "source" } },
    );
    assert.equal(b.status, 0, b.stderr);
    const files = readdirSync(fromSources, { recursive: true, encoding: "utf8" }).sort();
    assert.deepEqual(readdirSync(fromBundle, { recursive: true, encoding: "utf8" }).sort(), files);
    for (const f of files)
      if (statSync(join(fromSources, f)).isFile())
        assert.equal(readFileSync(join(fromBundle, f), "utf8"), readFileSync(join(fromSources, f), "utf8"), f);
    const refused = node(
      [winfleet(), "render", "--stack", "no-such-stack", "--out", join(scratch, "render-none")],
      {},
      REPO,
    );
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /Pulumi\.no-such-stack\.yaml is invalid:\n.*no such stack file; stacks here: .*byoh/);
    assert.ok(!existsSync(join(scratch, "render-none")));
  });
});
