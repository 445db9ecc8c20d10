#!/usr/bin/env node
// Every relative link in the repository's Markdown resolves inside the repository: the file
// exists, and a `#fragment` names a heading of the file it points at (GitHub's anchor rules).
// Links to other sites are left alone: they cannot be checked offline.
// Usage: node scripts/check-links.mjs [--root DIR] [FILE.md...]   (no FILE: every tracked .md file;
//        --root: the tree links must stay inside, the repository by default)
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, relative, resolve, sep } from "node:path";

const args = process.argv.slice(2);
const rootAt = args.indexOf("--root");
const root = rootAt >= 0 ? resolve(args.splice(rootAt, 2)[1] ?? ".") : resolve(new URL("..", import.meta.url).pathname);

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, "")
    .replace(/[`*_[\]()]/g, "")
    .replace(/[^\p{L}\p{N}\s-]/gu, "")
    .replace(/\s/g, "-");
}

const anchorsCache = new Map();
/** The anchors a Markdown file's headings make, numbered as GitHub numbers repeats. */
function anchorsOf(file) {
  let anchors = anchorsCache.get(file);
  if (anchors) return anchors;
  anchors = new Set();
  const seen = new Map();
  let fenced = false;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  anchorsCache.set(file, anchors);
  return anchors;
}

/** The links of one Markdown file outside code: inline `[text](target)` and reference definitions. */
function* linksOf(text) {
  let fenced = false;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const code = line.replace(/`[^`]*`/g, (s) => " ".repeat(s.length));
    for (const m of code.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) yield { line: i + 1, target: m[1] };
    const def = /^\s*\[[^\]]+\]:\s*(\S+)/.exec(code);
    if (def) yield { line: i + 1, target: def[1] };
  }
}

const files =
  args.length > 0
    ? args.map((f) => resolve(f))
    : execFileSync("git", ["ls-files", "-z", "--", "*.md"], { cwd: root, encoding: "utf8" })
        .split("\0")
        .filter(Boolean)
        .map((f) => resolve(root, f))
        .filter((f) => existsSync(f));

const problems = [];
for (const file of files) {
  const rel = relative(root, file);
  for (const { line, target } of linksOf(readFileSync(file, "utf8"))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // another site (https:, mailto:)
    const [path, fragment] = target.split("#", 2);
    const to = path === "" ? file : resolve(dirname(file), decodeURIComponent(path));
    if (to !== root && !to.startsWith(root + sep)) {
      problems.push(`${rel}:${line}: ${target} points outside the repository`);
      continue;
    }
    if (!existsSync(to)) {
      problems.push(`${rel}:${line}: ${target}: no such file`);
      continue;
    }
    if (fragment && to.endsWith(".md") && statSync(to).isFile() && !anchorsOf(to).has(fragment.toLowerCase())) {
      problems.push(`${rel}:${line}: ${target}: ${relative(root, to)} has no heading #${fragment}`);
    }
  }
}
if (problems.length > 0) {
  process.stderr.write(`${problems.join("\n")}\n${problems.length} broken link(s)\n`);
  process.exit(1);
}
process.stdout.write(`links: ${files.length} Markdown files, every relative link resolves\n`);
