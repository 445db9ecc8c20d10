#!/usr/bin/env node
// Folders are layers. This check reads every non-test TypeScript source file,
// maps each relative import to the folder it lands in, and fails when
//   - the folders import each other in a cycle (it names the cycle),
//   - a folder imports one in its own layer or above it (LAYERS below), or
//   - a file reaches past another folder's public index.ts into its internals.
// Tests (*.test.ts, test/) may import internals and are not read.
// A folder is agent/<name> for anything below agent/<name>/, "agent" for files
// directly in agent/, and the top-level directory otherwise (infra, components, policy).
// Usage: node scripts/check-layers.mjs [--graph] [--root DIR]
//   --graph: print the folder graph, its cycles and the layers, and stop.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";

const require = createRequire(import.meta.url);
const ts = require("typescript");

const rootAt = process.argv.indexOf("--root");
/** The checkout this script lies in, or `--root DIR` (the tests' scratch trees). */
const ROOT = rootAt > 0 ? resolve(process.argv[rootAt + 1]) : resolve(dirname(new URL(import.meta.url).pathname), "..");
const SOURCE_DIRS = ["agent", "components", "infra", "policy"];
/** Generated protobuf code is part of the broker and imports only its own folder. */
const SKIPPED_DIRS = new Set(["node_modules", "dist", "generated"]);

/**
 * The layers, bottom first: a folder imports only from layers below its own,
 * so no cycle can form. docs/architecture.md explains the order; a new folder
 * is refused until it is given a place here.
 */
const LAYERS = [
  ["agent/common", "agent", "policy"],
  ["agent/ignition", "agent/release", "agent/upgrade", "agent/broker", "agent/cluster", "agent/ssh"],
  ["agent/shell", "agent/content"],
  ["agent/lifecycle"],
  ["agent/service"],
  ["agent/report", "agent/diagnose"],
  ["components"],
  ["infra"],
  ["agent/publish", "agent/fleet", "agent/operator"],
  ["agent/cli"],
];
const LAYER_OF = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i])));

/**
 * Folders whose index.ts is not a library surface. infra/index.ts is the Pulumi
 * program's entry (`export =`), so infra's public surface is infra/public.ts.
 */
const PUBLIC_ENTRY = new Map([["infra", "infra/public.ts"]]);

/**
 * Modules other folders may name directly, beside the index. Most load
 * something heavy (gRPC, esbuild, Pulumi and its providers) that a command line
 * or an agent must not pay for unless it uses it: they are required lazily (or,
 * for the Pulumi components, only by the Pulumi program), and an index that
 * re-exported them would load them wherever anything else of the folder is used.
 * import-external.ts is the other way round: the bundles' tiny code-cache entry
 * (agent/release/code-cache.ts) needs its one constant and none of the rest.
 */
const HEAVY_ENTRIES = new Set([
  "agent/common/import-external.ts",
  "agent/broker/client.ts",
  "agent/broker/proxy-client.ts",
  "agent/broker/server.ts",
  "agent/publish/release.ts",
  "infra/operator-stack.ts",
  "infra/preflight-run.ts",
  "infra/render.ts",
  "components/agent-upgrader.ts",
  "components/byo-windows-host.ts",
  "components/calico-windows.ts",
  "components/cluster-join.ts",
  "components/content-bundle.ts",
  "components/windows-node-pool.ts",
  "components/wins-upgrader.ts",
]);

/** Every non-test .ts file below `dir`, relative to the repository root with "/" separators. */
function sources(dir) {
  const out = [];
  if (!existsSync(join(ROOT, dir))) return out;
  for (const name of readdirSync(join(ROOT, dir))) {
    const rel = `${dir}/${name}`;
    const st = statSync(join(ROOT, rel));
    if (st.isDirectory()) {
      if (!SKIPPED_DIRS.has(name)) out.push(...sources(rel));
    } else if (name.endsWith(".ts") && !name.endsWith(".test.ts") && !name.endsWith(".d.ts")) {
      out.push(rel);
    }
  }
  return out;
}

/** The layer a repository-relative file belongs to. */
function folderOf(file) {
  const parts = file.split("/");
  if (parts[0] === "agent") return parts.length > 2 ? `agent/${parts[1]}` : "agent";
  return parts[0];
}

/** The file a relative specifier resolves to, as TypeScript's CommonJS resolution would find it. */
function resolveSpecifier(fromFile, spec) {
  const base = relative(ROOT, resolve(ROOT, dirname(fromFile), spec))
    .split(sep)
    .join("/");
  const stripped = base.replace(/\.(?:js|ts)$/, "");
  for (const candidate of [`${stripped}.ts`, `${stripped}/index.ts`, base]) {
    try {
      if (statSync(join(ROOT, candidate)).isFile()) return candidate;
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}

/** The public entry of a folder: index.ts unless PUBLIC_ENTRY names another file. */
function publicEntry(folder) {
  return PUBLIC_ENTRY.get(folder) ?? (folder === "agent" ? undefined : `${folder}/index.ts`);
}

const files = SOURCE_DIRS.flatMap(sources).sort();
/** folder -> Map(target folder -> [file -> spec, ...]) */
const graph = new Map();
const violations = [];
for (const file of files) {
  const from = folderOf(file);
  if (!graph.has(from)) graph.set(from, new Map());
  const info = ts.preProcessFile(readFileSync(join(ROOT, file), "utf8"), true, true);
  for (const { fileName: spec } of info.importedFiles) {
    if (!spec.startsWith(".")) continue;
    const target = resolveSpecifier(file, spec);
    if (target === undefined) {
      violations.push(`${file}: cannot resolve "${spec}"`);
      continue;
    }
    const to = folderOf(target);
    if (to === from) continue;
    const edges = graph.get(from);
    if (!edges.has(to)) {
      edges.set(to, []);
      if (!LAYER_OF.has(from))
        violations.push(`${from}: not in LAYERS (scripts/check-layers.mjs); give the folder its layer`);
      else if (!LAYER_OF.has(to))
        violations.push(`${to}: not in LAYERS (scripts/check-layers.mjs); give the folder its layer`);
      else if (LAYER_OF.get(to) >= LAYER_OF.get(from)) {
        violations.push(
          `${file}: ${from} (layer ${LAYER_OF.get(from) + 1}) imports ${to} (layer ${LAYER_OF.get(to) + 1}) through "${spec}"; a folder imports only from layers below its own`,
        );
      }
    }
    edges.get(to).push(`${file} -> ${spec}`);
    // Files directly in agent/ (version.ts) are leaves with no index of their own.
    const entry = publicEntry(to);
    if (entry !== undefined && target !== entry && !HEAVY_ENTRIES.has(target)) {
      violations.push(`${file}: imports "${spec}", past ${to}'s public ${entry.slice(to.length + 1)}`);
    }
  }
}

/** Strongly connected components with more than one folder (Tarjan). */
function cycles() {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v), idx.get(w)));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return found;
}

/** The edges inside one strongly connected component, each with the imports behind it. */
function describe(scc) {
  const inside = new Set(scc);
  const lines = [];
  for (const from of scc) {
    for (const [to, why] of graph.get(from) ?? []) {
      if (inside.has(to)) lines.push(`  ${from} -> ${to}  (${why.join("; ")})`);
    }
  }
  return lines;
}

if (process.argv.includes("--graph")) {
  for (const from of [...graph.keys()].sort()) {
    const targets = [...(graph.get(from)?.keys() ?? [])].sort();
    process.stdout.write(`${from} -> ${targets.join(", ") || "(nothing)"}\n`);
  }
  for (const scc of cycles()) process.stdout.write(`cycle: ${scc.join(", ")}\n${describe(scc).join("\n")}\n`);
  LAYERS.forEach((folders, i) => process.stdout.write(`layer ${i + 1}: ${folders.join(", ")}\n`));
  process.exit(0);
}

const loops = cycles();
for (const scc of loops) {
  process.stderr.write(`folders import each other in a cycle: ${scc.join(", ")}\n${describe(scc).join("\n")}\n`);
}
for (const v of violations) process.stderr.write(`${v}\n`);
if (loops.length > 0 || violations.length > 0) {
  process.stderr.write("see docs/architecture.md (Layers) for the order folders may import in\n");
  process.exitCode = 1;
} else {
  process.stdout.write(
    `layers: ${graph.size} folders in ${LAYERS.length} layers, no cycle, every cross-folder import goes through an index\n`,
  );
}
