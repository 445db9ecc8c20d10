#!/usr/bin/env node
// Where tests live (docs/testing.md, "Where tests live"): this check fails, naming
// the file and the broken part of the rule, when a test file is anywhere else or a
// test beside the code does what only the suites under test/ may do.
//   - A test beside the code, <folder>/<module>.test.ts, tests the module of that
//     name beside it. It starts no process and no server (no child_process, net,
//     http, https, http2, tls, dgram, cluster or worker_threads), imports nothing
//     from test/, and imports product code only from its own folder or from a
//     folder that folder's own code already imports, so tests add no edge to the
//     folder graph.
//   - Everything else is a suite under test/<area>/<name>.test.ts (not in
//     test/support, test/fixtures or test/bench, which hold no tests).
//   - No file imports a test file; what tests share lives in test/support/.
// A folder is agent/<name> under agent/, else the top-level directory.
// Usage: node scripts/check-test-layout.mjs [ROOT]   (default: this repository)
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(process.argv[2] ?? new URL("..", import.meta.url).pathname);
/** Top-level folders of product code, where unit tests may sit beside the modules. */
const PRODUCT = ["agent", "components", "infra", "policy"];
/** Folders under test/ that hold what the suites share, never a test. */
const NOT_AREAS = new Set(["support", "fixtures", "bench"]);
/** Modules that start processes or servers: a test that needs one is a suite under test/. */
const STARTERS = new Set([
  "child_process",
  "net",
  "http",
  "https",
  "http2",
  "tls",
  "dgram",
  "cluster",
  "worker_threads",
]);
const SKIPPED_DIRS = new Set(["node_modules", "dist", "coverage"]);

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIPPED_DIRS.has(entry.name)) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(full);
    else if (/\.[cm]?[jt]s$/.test(entry.name)) yield relative(root, full);
  }
}

const isTest = (rel) => /\.test\.[cm]?[jt]s$/.test(rel);
const folderOf = (rel) => {
  const parts = rel.split("/");
  return parts[0] === "agent" && parts.length > 2 ? `agent/${parts[1]}` : parts[0];
};

/** What a relative specifier in `rel` names, repository-relative; a folder stands for its index. */
function target(rel, spec) {
  const path = resolve(root, dirname(rel), spec);
  return relative(root, statSync(path, { throwIfNoEntry: false })?.isDirectory() ? join(path, "index") : path);
}

/** Every module specifier a source text imports, requires or loads. */
function specifiers(text) {
  const re = /\b(?:from\s*|import\s*\(\s*|require\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm;
  return [...text.matchAll(re)].map((m) => m[1]);
}

const files = [...walk(root)].sort();
const problems = [];

// The folder graph as the product code draws it: folder -> folders it imports.
const edges = new Map();
for (const rel of files) {
  if (!PRODUCT.includes(rel.split("/")[0]) || isTest(rel)) continue;
  const own = folderOf(rel);
  const set = edges.get(own) ?? new Set();
  for (const spec of specifiers(readFileSync(join(root, rel), "utf8"))) {
    if (!spec.startsWith(".")) continue;
    const folder = folderOf(target(rel, spec));
    if (folder !== own) set.add(folder);
  }
  edges.set(own, set);
}

// A test file is run, never imported: what two tests share belongs in test/support/ (or beside a suite).
for (const rel of files) {
  for (const spec of specifiers(readFileSync(join(root, rel), "utf8"))) {
    if (spec.startsWith(".") && /\.test(\.[cm]?[jt]s)?$/.test(spec))
      problems.push(`${rel}: imports ${spec}, a test file: move what it shares to test/support/`);
  }
}

for (const rel of files.filter(isTest)) {
  const parts = rel.split("/");
  if (parts[0] === "test") {
    if (parts.length !== 3 || NOT_AREAS.has(parts[1]))
      problems.push(
        `${rel}: a suite lives at test/<area>/<name>.test.ts (not deeper, and not in ${[...NOT_AREAS].map((d) => `test/${d}`).join(", ")})`,
      );
    continue;
  }
  if (!PRODUCT.includes(parts[0]) || parts.length < 2) {
    problems.push(`${rel}: a test lives beside a module under ${PRODUCT.join("/, ")}/, or under test/<area>/`);
    continue;
  }
  const module = rel.replace(/\.test(\.[cm]?[jt]s)$/, "$1");
  if (!existsSync(join(root, module)))
    problems.push(`${rel}: a test beside the code is named after the module it tests, and there is no ${module}`);
  const own = folderOf(rel);
  for (const spec of specifiers(readFileSync(join(root, rel), "utf8"))) {
    const builtin = spec.replace(/^node:/, "").split("/")[0];
    if (STARTERS.has(builtin) && (spec.startsWith("node:") || !spec.includes("/"))) {
      problems.push(`${rel}: imports ${spec}: a test that starts processes or servers is a suite under test/<area>/`);
      continue;
    }
    if (!spec.startsWith(".")) continue;
    const named = target(rel, spec);
    const folder = folderOf(named);
    if (folder === own) continue;
    if (!PRODUCT.includes(named.split("/")[0]))
      problems.push(
        `${rel}: imports ${spec} (${named}): a test beside the code imports only product code; shared test support is for the suites under test/`,
      );
    else if (!edges.get(own)?.has(folder))
      problems.push(
        `${rel}: imports ${spec} from ${folder}, which no module of ${own} imports: a test that crosses folders is a suite under test/<area>/`,
      );
  }
}

if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`${problems.length} test file problem(s); the rule is in docs/testing.md, "Where tests live"`);
  process.exit(1);
}
console.log(`${files.filter(isTest).length} test files where the rule puts them`);
