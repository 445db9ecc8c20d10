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
/** Engines a benchmark needs that set-up does not build (`onDemand` in scripts/engines/engines.json). */
const ON_DEMAND = { "kwok-fleet.bench.ts": ["kwok"] };
let failed = 0;
for (const b of benches) {
  console.log(`\n## ${b}`);
  const engines = ON_DEMAND[b];
  if (engines) {
    // Cached after the first build (a cold one takes minutes); the build names what failed.
    const built = spawnSync(
      process.execPath,
      [join(dir, "../../scripts/engines/build.mjs"), "--only", engines.join(",")],
      {
        stdio: "inherit",
      },
    );
    if (built.status !== 0) {
      console.error(`${b}: could not build ${engines.join(", ")}; skipped`);
      failed++;
      continue;
    }
  }
  const r = spawnSync(process.execPath, ["--import", "tsx", join(dir, b)], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exit(failed === 0 ? 0 : 1);
