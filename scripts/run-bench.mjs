#!/usr/bin/env node
// Runs the benchmarks in test/bench/ (never part of npm test). Each prints its
// measurements and ratios against a baseline measured in the same run.
// Usage: npm run bench [-- <name filter>]
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const dir = new URL("../test/bench/", import.meta.url).pathname;
const filters = process.argv.slice(2);
const benches = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts") && (filters.length === 0 || filters.some((x) => f.includes(x))))
  .sort();
let failed = 0;
for (const b of benches) {
  console.log(`\n## ${b}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", join(dir, b)], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
