/**
 * The agent's single-file bundle (`npm run build`): built for real with
 * esbuild, copied where no node_modules can be found, and run — the lifecycle
 * engine end to end on the sandbox content, the code cache, and the checkout
 * launcher that refuses a stale bundle.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { buildBundles } from "../../agent/release/build";

const REPO = join(__dirname, "..", "..");
const scratch = mkdtempSync(join(tmpdir(), "winfleet-bundle-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const node = (args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd = scratch): { code: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, args, { cwd, encoding: "utf8", timeout: 60_000, env: { PATH: process.env.PATH ?? "", HOME: scratch, WINFLEET_CODE_CACHE: "off", ...env } });
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
    // Only Node's own modules, and the optional externals, are required at run time ("encoding" is
    // node-fetch's optional converter, required inside a try, reached through the Kubernetes client).
    const lib = readFileSync(join(shipped, "lib", "winfleet-agent.js"), "utf8");
    const required = new Set([...lib.matchAll(/require\("([^"./][^"]*)"\)/g)].map((m) => m[1] as string).filter((m) => !m.startsWith("node:")));
    const builtins = new Set<string>(builtinModules);
    const foreign = [...required].filter((m) => !builtins.has(m) && !["tree-sitter", "tree-sitter-powershell", "@grpc/proto-loader", "encoding"].some((x) => m === x || m.startsWith(`${x}/`)));
    assert.deepEqual(foreign, [], "packages the bundle would need from node_modules");
    assert.ok(existsSync(join(out, ".build", "agent.json")));
  });

  it("runs the lifecycle engine end to end with no node_modules: apply with its reboot, resume, verify, uninstall", () => {
    const content = join(scratch, "content-bundle");
    const built = spawnSync(process.execPath, [join(REPO, "bin", "winfleet.js"), "content", "build", "--out", content], { encoding: "utf8" });
    assert.equal(built.status, 0, built.stderr);
    const root = join(scratch, "host");
    const apply = (): ReturnType<typeof node> => node([bin, "apply", "--content", content, "--template", "sandbox@1.0.0", "--root", root, "--node-name", "bundled-1"]);
    const first = apply();
    assert.equal(first.code, 194, `the sandbox's reboot (3010 arrives as 194): ${first.stderr}`);
    const second = apply();
    assert.equal(second.code, 0, second.stderr);
    const status = JSON.parse(node([bin, "status", "--root", root, "--json"]).stdout) as { template?: { name: string; version: string } };
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

  it("keeps compiled code in a private per-user cache, and runs whatever the cache holds", () => {
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
    writeFileSync(join(dir, "dist", ".build", "agent.json"), JSON.stringify({ format: 1, bundle: "agent/bin/winfleet-agent.js", inputs: { "agent/cli/agent-main.ts": { size: s.size, mtimeMs: s.mtimeMs } } }));
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
    assert.match(node([agent, "--version"], { WINFLEET_LAUNCH: "bundle" }).stderr, /dist\/agent\/bin\/winfleet-agent\.js does not exist \(run npm run build\)/);
    assert.equal(node([agent, "--version"], { WINFLEET_LAUNCH: "sometimes" }).code, 2);
  });
});
