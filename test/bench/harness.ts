/**
 * Small helpers for benchmarks: repeated timing, medians, aligned output; and
 * a clean environment for every process a benchmark starts (see below).
 */
import { performance } from "node:perf_hooks";

/**
 * What the environment may add to every Node start, ours and the baseline's alike, which would
 * hide a ratio: this machine sets `NODE_EXTRA_CA_CERTS`, and Node 20 reads and parses that file
 * as it starts (about 50 ms here, where `node -e 0` takes about 30 ms; 2 MB of RSS). A node's
 * service runs with neither. Removed at import, so every process a benchmark spawns goes without.
 */
const STARTUP_ENV = ["NODE_EXTRA_CA_CERTS", "NODE_OPTIONS"] as const;
const removed = STARTUP_ENV.filter((name) => process.env[name] !== undefined);
for (const name of removed) delete process.env[name];
if (removed.length > 0)
  console.log(
    `(every process starts without ${removed.join(" and ")}, which this environment sets and which adds to every Node start)`,
  );

/** Median wall time in ms of `runs` runs of `work`; `prepare` runs untimed before each. */
export async function medianMs(runs: number, work: () => unknown, prepare?: () => void): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    prepare?.();
    const t = performance.now();
    await work();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] ?? NaN;
}

/**
 * Median wall times in ms of each of `works`, taking turns run by run, so a
 * machine that slows down or speeds up mid-benchmark weighs on every one alike.
 */
export async function interleavedMedianMs(runs: number, works: readonly (() => unknown)[]): Promise<number[]> {
  const times = works.map(() => [] as number[]);
  for (let i = 0; i < runs; i++) {
    for (const [k, work] of works.entries()) {
      const t = performance.now();
      await work();
      times[k]?.push(performance.now() - t);
    }
  }
  return times.map((ts) => ts.sort((a, b) => a - b)[Math.floor(ts.length / 2)] ?? NaN);
}

/** Prints `label: ours vs baseline (ratio)`. */
export function report(
  label: string,
  ours: { name: string; ms: number },
  baseline: { name: string; ms: number },
  unit = "ms",
): void {
  const ratio = ours.ms / baseline.ms;
  console.log(
    `${label.padEnd(28)} ${ours.name} ${ours.ms.toFixed(1).padStart(9)} ${unit} | ${baseline.name} ${baseline.ms.toFixed(1).padStart(9)} ${unit} | ratio ${ratio.toFixed(2)}x`,
  );
}

/** Prints a goal's verdict on one line that `npm run bench | grep GOAL` collects. */
export function goal(what: string, measured: string, target: string, met: boolean): void {
  console.log(`GOAL ${what}: ${measured} (goal ${target}): ${met ? "met" : "NOT met"}`);
}
