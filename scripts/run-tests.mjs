#!/usr/bin/env node
// Runs every *.test.ts in the repository with node's test runner (through tsx) and
// ends with one plain summary line, "N passed, N failed, N skipped", that CI reads.
// Usage: npm test [-- <path filter>...]
//        npm run test:fast [-- <path filter>...]   the fast tier (--fast): the unit tests beside
//        the code and the static checks of test/ci and test/content, without the suites under
//        test/ that start processes, servers, fleets and engines (docs/testing.md, "Where tests live").
// The suites under test/wine run on Windows' Node.js: npm run test:wine (scripts/wine/run-tests.mjs).
// Files run WINFLEET_TEST_CONCURRENCY at a time (default: the cores, from 2 to 4): the end-to-end suites spend most of
// their time waiting on control planes, timers and child processes, so two overlap well even on two cores; past four,
// that many control planes and fleets at once would make their own timing the thing under test.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const searched = ["agent", "components", "infra", "policy", "test"];
const fast = process.argv.includes("--fast");
const filters = process.argv.slice(2).filter((a) => a !== "--fast");
/** Under test/, the fast tier keeps only these folders; every unit test beside the code is in it. */
const FAST_TEST_DIRS = ["test/ci/", "test/content/"];

function* walk(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name === "node_modules" || entry.name === "bench" || entry.name.startsWith(".")) continue;
      // The Wine tier runs on Windows' Node.js, through npm run test:wine.
      if (relative(root, full) === join("test", "wine")) continue;
      yield* walk(full);
    } else if (entry.name.endsWith(".test.ts")) {
      yield full;
    }
  }
}

const files = searched
  .filter((d) => existsSync(join(root, d)))
  .flatMap((d) => [...walk(join(root, d))])
  .map((f) => relative(root, f))
  .filter((f) => !fast || !f.startsWith("test/") || FAST_TEST_DIRS.some((d) => f.startsWith(d)))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}

const concurrency = Number(process.env.WINFLEET_TEST_CONCURRENCY) || Math.min(4, Math.max(2, availableParallelism()));
const out = mkdtempSync(join(tmpdir(), "winfleet-test-"));
const tap = join(out, "report.tap");
const args = [
  "--import",
  "tsx",
  "--test",
  "--test-timeout=600000",
  `--test-concurrency=${concurrency}`,
  "--test-reporter=spec",
  "--test-reporter-destination=stdout",
  "--test-reporter=tap",
  `--test-reporter-destination=${tap}`,
  ...files,
];
const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
child.on("exit", (code, signal) => {
  let text = "";
  try {
    text = readFileSync(tap, "utf8");
  } catch {
    /* the runner died before writing */
  }
  rmSync(out, { recursive: true, force: true });
  const count = (name) => Number((text.match(new RegExp(`^# ${name} (\\d+)$`, "m")) ?? [])[1] ?? 0);
  const passed = count("pass");
  const failed = count("fail") + count("cancelled");
  // A skipped suite is one "# SKIP" line in TAP but not in its "# skipped" total.
  const skipped = Math.max(count("skipped"), (text.match(/^\s*ok \d+ - .*# SKIP/gm) ?? []).length) + count("todo");
  console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
  if (signal) process.exit(1);
  process.exit(code === 0 && failed === 0 ? 0 : 1);
});
