#!/usr/bin/env node
// The repository speaks of the product, not of how it was built: this check
// fails, naming file:line and the words, when a tracked file refers to the
// numbered steps or sittings the work was done in, to issue numbers, or to files
// outside the repository. Product words that look alike pass: a PowerShell or
// SSH session, "a new session", a CSS colour value, PKCS#8.
// Usage: node scripts/check-words.mjs [FILE...]   (no FILE: every tracked file)
import { execFileSync } from "node:child_process";
import { lstatSync, readFileSync } from "node:fs";
import { relative, resolve } from "node:path";

/**
 * Files that are not ours to word: the lock file is npm's, LICENSE is the Apache
 * text verbatim, and this script has to spell out what it looks for.
 */
const SKIPPED = new Set(["package-lock.json", "LICENSE", "scripts/check-words.mjs"]);

/**
 * The one allowed exception to "no file outside the repository": CI's script
 * puts the file-based Go module proxy that sits beside a checkout on the CI
 * machines in front of the usual proxy (it serves modules the usual proxy
 * refuses there). Only that path, only in that file.
 */
const EXEMPT = new Map([[".ci/run", /\.\.\/shared\/goproxy\b/]]);

/** The property a colour value belongs to, as in `color: ...` or `border: 1px solid ...`. */
const CSS_VALUE = /(?:colou?r|background|border[\w-]*|fill|stroke|outline|shadow)\s*:[^;{}]*$/i;

/**
 * What is refused, each with the reason printed beside a hit. Patterns are
 * case-insensitive and matched line by line.
 */
const RULES = [
  { why: "a numbered step of the work", re: /\bstops? #?\d+\b/gi },
  { why: "a sitting of the work", re: /\b(?:work |working |coding )?sessions? #?\d+\b/gi },
  {
    why: "a sitting of the work",
    re: /\b(?:this|an? earlier|earlier|previous|prior|last|a later|later|next) (?:work |working |coding )?session\b(?!'s| process| group| state)/gi,
  },
  { why: "a sitting of the work", re: /\b(?:work|working|coding) sessions?\b/gi },
  { why: "an issue number", re: /\b(?:issues?|pr|pull request|tickets?|bugs?)\s*#\d+\b/gi },
  {
    why: "an issue number",
    re: /(?<![\w$&#/])#\d+\b(?![\w-])/g,
    keep: (line, at) => !CSS_VALUE.test(line.slice(0, at)),
  },
  {
    why: "a work item",
    re: /\b(?:built|added|done|made|fixed) (?:by|in|for|during) (?:the |this |an? )?(?:issue|session|stop|brief)\b/gi,
  },
  { why: "the machines it was built on", re: /\bthese\s+(?:\w+\s+)?machines\b/gi },
  { why: "a file outside the repository", re: /\.\.\/shared\//g },
  { why: "a file outside the repository", re: /\bshared\/(?:seeds|reference)\b/gi },
  { why: "a file outside the repository", re: /(?<![\w.~-])\/work\//g },
  {
    why: "a file outside the repository",
    re: /\bDESIGN\.md\b/g,
    keep: (_line, _at, tracked) => !tracked.has("DESIGN.md"),
  },
];

/**
 * Every refused phrase in `text`.
 * @param {string} text the file's contents
 * @param {ReadonlySet<string>} [tracked] paths the repository tracks (a DESIGN.md among them may be named)
 * @param {string} [file] the file's path in the repository (its exemption, if it has one)
 * @returns {{ line: number, words: string, why: string }[]}
 */
export function findWords(text, tracked = new Set(), file = "") {
  const hits = [];
  const exempt = EXEMPT.get(file);
  text.split("\n").forEach((line, i) => {
    const taken = []; // [start, end) of this line's hits: a phrase two patterns match is one hit, not two
    for (const rule of RULES) {
      for (const m of line.matchAll(rule.re)) {
        const start = m.index;
        const end = start + m[0].length;
        if (rule.keep && !rule.keep(line, start, tracked)) continue;
        if (exempt && rule.why === "a file outside the repository" && exempt.test(line.slice(start))) continue;
        if (taken.some(([s, e]) => start < e && s < end)) continue;
        taken.push([start, end]);
        hits.push({ line: i + 1, words: m[0], why: rule.why });
      }
    }
  });
  return hits;
}

function trackedFiles(root) {
  return execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 })
    .split("\0")
    .filter((f) => f !== "");
}

function main() {
  const root = resolve(new URL("..", import.meta.url).pathname);
  const tracked = new Set(trackedFiles(root));
  const args = process.argv.slice(2);
  // Named files are read as given (from the working directory); tracked ones from the root.
  const files =
    args.length > 0
      ? args
      : [...tracked].filter((f) => !SKIPPED.has(f)).map((f) => relative(process.cwd(), resolve(root, f)));
  let count = 0;
  for (const file of files) {
    let buf;
    try {
      if (args.length === 0 && !lstatSync(file).isFile()) continue; // a tracked link or submodule: its target is checked where it lives
      buf = readFileSync(file);
    } catch (e) {
      if (args.length === 0 && e?.code === "ENOENT") continue; // tracked but deleted in the work tree
      console.error(`check-words: cannot read ${file}: ${e?.message ?? e}`);
      process.exit(2);
    }
    if (buf.includes(0)) continue; // binary
    for (const hit of findWords(buf.toString("utf8"), tracked, relative(root, resolve(file)))) {
      console.log(`${file}:${hit.line}: "${hit.words}" (${hit.why})`);
      count++;
    }
  }
  if (count > 0) {
    console.error(
      `check-words: ${count} place(s) speak of how the project was built; say what the product does instead`,
    );
    process.exit(1);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) main();
