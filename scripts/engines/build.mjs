#!/usr/bin/env node
// Builds the real engines winfleet's tests and `winfleet local up --cluster` run — the Pulumi CLI
// and Pulumi's own Node.js language host, the `kubernetes` and `command` resource plugins,
// kube-apiserver, kube-controller-manager and etcd — with this machine's Go, through the Go module
// proxy the environment names (GOPROXY and GONOSUMDB are passed through as given), at the
// versions scripts/engines/engines.json pins. Each build is cached outside the checkout by name,
// version and a digest of the module that builds it, so a second run rebuilds nothing.
//
// Usage: node scripts/engines/build.mjs [--only NAME[,NAME]]
// An engine marked `onDemand` (one only a benchmark runs) is built when --only names it, not by default.
// Writes <cache>/engines/index.json (what each engine's binaries are) and installs resource
// plugins under $PULUMI_HOME/plugins (default ~/.pulumi/plugins), where the engine looks for them.
// Exits 1 naming the engine and the command when a build fails.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, join, relative } from "node:path";

const here = dirname(new URL(import.meta.url).pathname);
const manifest = JSON.parse(readFileSync(join(here, "engines.json"), "utf8"));
const cache = join(
  process.env.WINFLEET_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "winfleet"),
  "engines",
);
const pulumiHome = process.env.PULUMI_HOME || join(homedir(), ".pulumi");
const go = process.env.GO || (existsSync("/usr/local/go/bin/go") ? "/usr/local/go/bin/go" : "go");

const onlyArg = process.argv.indexOf("--only");
const only = onlyArg > 0 ? new Set(process.argv[onlyArg + 1].split(",")) : undefined;
if (process.argv.includes("--help")) {
  console.log(
    "usage: node scripts/engines/build.mjs [--only NAME[,NAME]]\nengines: " +
      manifest.engines.map((e) => e.name).join(", "),
  );
  process.exit(0);
}

class BuildError extends Error {}

function run(command, args, options = {}) {
  const shown = [command, ...args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ");
  const r = spawnSync(command, args, {
    stdio: ["ignore", "inherit", "inherit"],
    ...options,
    env: { ...process.env, ...options.env },
  });
  if (r.error) throw new BuildError(`\`${shown}\` could not start: ${r.error.message}`);
  if (r.status !== 0)
    throw new BuildError(`\`${shown}\` (in ${options.cwd ?? process.cwd()}) exited ${r.status ?? r.signal}`);
  return r;
}

function output(command, args, options = {}) {
  const r = spawnSync(command, args, { encoding: "utf8", ...options, env: { ...process.env, ...options.env } });
  if (r.status !== 0)
    throw new BuildError(`\`${command} ${args.join(" ")}\` exited ${r.status ?? r.signal}: ${(r.stderr ?? "").trim()}`);
  return r.stdout;
}

/** Every file of a module directory of ours, for the cache key. */
function moduleFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(dir);
  return out;
}

function cacheKey(engine) {
  const h = createHash("sha256")
    .update(JSON.stringify(engine))
    .update(output(go, ["env", "GOVERSION"]));
  if (engine.module) {
    const dir = join(here, engine.module);
    for (const f of moduleFiles(dir)) h.update(relative(dir, f)).update(readFileSync(f));
  }
  return h.digest("hex").slice(0, 12);
}

function ldflags(engine) {
  const semver = engine.version.replace(/^v/, "");
  return [
    "-s",
    "-w",
    ...engine.ldflags.map((f) => f.replaceAll("{version}", engine.version).replaceAll("{semver}", semver)),
  ].join(" ");
}

function build(engine, out) {
  let cwd = engine.module ? join(here, engine.module) : undefined;
  const env = { GOFLAGS: "-mod=readonly" };
  if (engine.copyModule) {
    // A module that needs a generated file it does not ship: copy it out of the module cache,
    // point its sibling-directory replacements at published releases, generate, then build.
    const info = JSON.parse(output(go, ["mod", "download", "-json", engine.copyModule]));
    if (!info.Dir)
      throw new BuildError(
        `\`go mod download ${engine.copyModule}\` gave no directory: ${info.Error ?? "unknown error"}`,
      );
    cwd = join(out, "src");
    cpSync(info.Dir, cwd, { recursive: true });
    for (const f of moduleFiles(cwd)) chmodSync(f, 0o644);
    const makeWritable = (d) => {
      chmodSync(d, 0o755);
      for (const e of readdirSync(d, { withFileTypes: true })) if (e.isDirectory()) makeWritable(join(d, e.name));
    };
    makeWritable(cwd);
    for (const r of engine.replace ?? []) run(go, ["mod", "edit", `-replace=${r}`], { cwd });
    env.GOFLAGS = "-mod=mod";
    run(go, ["generate", engine.generate], { cwd, env: { ...env, VERSION: engine.version.replace(/^v/, "") } });
  }
  run(go, ["build", "-trimpath", "-ldflags", ldflags(engine), "-o", join(out, "bin") + "/", ...engine.packages], {
    cwd,
    env,
  });
  if (engine.copyModule) rmSync(join(out, "src"), { recursive: true, force: true });
  // Data files the upstream module ships that tests read as they are (a CRD's schema), beside the binaries.
  const data = Object.entries(engine.data ?? {});
  if (data.length > 0) {
    const info = JSON.parse(output(go, ["mod", "download", "-json", engine.versionOf], { cwd, env }));
    if (!info.Dir) throw new BuildError(`\`go mod download ${engine.versionOf}\` gave no directory`);
    for (const [name, path] of data) copyFileSync(join(info.Dir, path), join(out, "bin", name));
  }
}

function installPlugin(engine, dir) {
  // The engine looks a plugin up as <PULUMI_HOME>/plugins/<kind>-<name>-v<version>/pulumi-<kind>-<name>.
  const { kind, name } = engine.plugin;
  const target = join(pulumiHome, "plugins", `${kind}-${name}-${engine.version}`);
  const binary = `pulumi-${kind}-${name}`;
  mkdirSync(target, { recursive: true });
  const dest = join(target, binary);
  const src = join(dir, "bin", binary);
  // The build directory's name carries the cache key: a plugin copied from it is that build.
  const origin = join(target, ".winfleet-build");
  if (!existsSync(dest) || !existsSync(origin) || readFileSync(origin, "utf8") !== dir) {
    copyFileSync(src, `${dest}.tmp`);
    chmodSync(`${dest}.tmp`, 0o755);
    renameSync(`${dest}.tmp`, dest);
    writeFileSync(origin, dir);
  }
  rmSync(`${target}.partial`, { force: true });
  return target;
}

const indexPath = join(cache, "index.json");
const readIndex = () => (existsSync(indexPath) ? JSON.parse(readFileSync(indexPath, "utf8")) : { engines: {} });
const built = {};
mkdirSync(cache, { recursive: true });
let failed = 0;
for (const engine of manifest.engines) {
  if (only ? !only.has(engine.name) : engine.onDemand) continue;
  const dir = join(cache, `${engine.name}-${engine.version}-${cacheKey(engine)}`);
  const started = Date.now();
  try {
    if (existsSync(join(dir, ".complete"))) {
      console.log(`cached: ${engine.name} ${engine.version} (${dir})`);
    } else {
      console.log(
        `building ${engine.name} ${engine.version} (${engine.binaries.join(", ")}) with ${output(go, ["env", "GOVERSION"]).trim()}…`,
      );
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      try {
        build(engine, tmp);
        for (const b of engine.binaries)
          if (!existsSync(join(tmp, "bin", b))) throw new BuildError(`the build made no ${b}`);
        writeFileSync(join(tmp, ".complete"), `${new Date().toISOString()}\n`);
        rmSync(dir, { recursive: true, force: true });
        renameSync(tmp, dir);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
      console.log(`built ${engine.name} ${engine.version} in ${Math.round((Date.now() - started) / 1000)} s`);
    }
    const entry = {
      version: engine.version,
      dir,
      binaries: Object.fromEntries(engine.binaries.map((b) => [b, join(dir, "bin", b)])),
    };
    if (engine.plugin) entry.plugin = installPlugin(engine, dir);
    built[engine.name] = entry;
  } catch (e) {
    if (!(e instanceof BuildError)) throw e;
    failed++;
    console.error(`setup: could not build ${engine.name} ${engine.version}: ${e.message}`);
  }
}
// Read again just before writing: another build (--only) may have recorded its engines meanwhile.
const index = readIndex();
Object.assign(index.engines, built);
writeFileSync(`${indexPath}.tmp-${process.pid}`, `${JSON.stringify(index, null, 2)}\n`);
renameSync(`${indexPath}.tmp-${process.pid}`, indexPath);
process.exit(failed > 0 ? 1 : 0);
