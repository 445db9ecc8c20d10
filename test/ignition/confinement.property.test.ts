/**
 * Root confinement as a property. For random root layouts (directories, files,
 * absolute and relative links in the parent chain, pointing inside the root,
 * at a sentinel tree beside it, or climbing past the host's `/`) and random
 * configs of every spec version the engine reads, applying never changes
 * anything outside the root: the sentinel and everything else beside the root
 * are hashed before and after (bytes, modes, link targets, link counts). A
 * failed apply leaves the root as it was. Where CoreOS Ignition is installed,
 * every COMPARE_EVERY-th case whose result CoreOS decides from the root alone
 * (see coreosConfined) is applied by it too, to an identical root at the same
 * path, and the trees must match (or both applies fail).
 *
 * 2,000 cases from a fixed seed by default; WINFLEET_PROPERTY_SEED=<n> or
 * =random, WINFLEET_PROPERTY_RUNS=<n> and WINFLEET_PROPERTY_COMPARE_EVERY=<n>
 * for longer, nightly-style runs (the seed is printed, and a failure names it
 * with fast-check's shrunk case).
 */
import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { errorMessage } from "../../agent/common/errors";
import { applyIgnition, parseIgnition, renderV3, rootedMapper } from "../../agent/ignition";
import { IGNITION_OWN_FILES, prepareRoot, runCoreOsIgnition } from "./coreos";
import {
  type ConfinementCase,
  configOf,
  confinementCase,
  coreosConfined,
  writeLayout,
  writeSentinel,
} from "./corpus-confinement";
import { IGNITION, locate, scratchDir, snapshotTree, type TreeNode } from "../support";

const FIXED_SEED = 20261125;
const seedText = process.env.WINFLEET_PROPERTY_SEED;
const seed =
  seedText === undefined || seedText === ""
    ? FIXED_SEED
    : seedText === "random"
      ? (Date.now() ^ (Math.random() * 0x7fffffff)) | 0
      : Number(seedText);
const runs = Number(process.env.WINFLEET_PROPERTY_RUNS ?? 2000);
/** CoreOS takes ~70 ms a run; comparing one case in this many keeps CI near a minute (1 compares every case). */
const COMPARE_EVERY = Math.max(1, Number(process.env.WINFLEET_PROPERTY_COMPARE_EVERY ?? 8));
const coreos = locate(IGNITION) !== undefined;

const work = scratchDir("winfleet-confine-prop-");

interface Outcome {
  readonly beside: TreeNode[];
  readonly root: TreeNode[];
  readonly error?: string;
}

/** Builds the case at `base` (root beside a sentinel), applies with `engine`, and snapshots. */
async function runCase(
  c: ConfinementCase,
  base: string,
  engine: (root: string) => Promise<string | undefined>,
): Promise<{ before: Outcome; after: Outcome }> {
  rmSync(base, { recursive: true, force: true });
  const root = join(base, "root");
  mkdirSync(root, { recursive: true });
  prepareRoot(root);
  writeSentinel(join(base, "outside"));
  writeLayout(root, base, c.layout);
  const snap = (error?: string): Outcome => ({
    beside: snapshotTree(base, ["root"]),
    root: snapshotTree(root, IGNITION_OWN_FILES),
    ...(error === undefined ? {} : { error }),
  });
  const before = snap();
  return { before, after: snap(await engine(root)) };
}

async function ours(c: ConfinementCase, base: string, root: string): Promise<string | undefined> {
  try {
    const { config } = parseIgnition(JSON.stringify(configOf(c, base)));
    // No ledger: it only changes re-applies, and writing it durably would cost more than the apply.
    await applyIgnition(config, { mapper: rootedMapper(root), durable: false });
    return undefined;
  } catch (e) {
    return errorMessage(e);
  }
}

/** The config CoreOS Ignition 2.14 reads for a case: 3.0–3.3 as generated, 2.2 and 3.4 translated to 3.3. */
function forCoreOs(c: ConfinementCase, base: string): string | undefined {
  const text = JSON.stringify(configOf(c, base));
  if (c.version !== "2.2.0" && c.version !== "3.4.0") return text;
  try {
    return JSON.stringify(renderV3(parseIgnition(text).config));
  } catch {
    return undefined;
  }
}

describe("root confinement", () => {
  it(`holds for ${runs} random layouts and configs (seed ${seed})`, async () => {
    process.stdout.write(
      `root confinement property: seed ${seed}, ${runs} cases${coreos ? `, one in ${COMPARE_EVERY} compared with CoreOS Ignition` : ""}\n`,
    );
    const tally = { cases: 0, applied: 0, linked: 0, compared: 0, chained: 0 };
    await fc.assert(
      fc.asyncProperty(confinementCase, async (c) => {
        const n = tally.cases++;
        const base = join(work, "case");
        const mine = await runCase(c, base, (root) => ours(c, base, root));
        assert.deepEqual(mine.after.beside, mine.before.beside, "something outside the root changed");
        if (mine.after.error !== undefined)
          assert.deepEqual(
            mine.after.root,
            mine.before.root,
            `the apply failed (${mine.after.error}) but changed the root`,
          );
        else tally.applied++;
        if (c.layout.some((l) => l.type === "symlink")) tally.linked++;
        if (!coreos || n % COMPARE_EVERY !== 0) return;
        if (!coreosConfined(c, base)) {
          tally.chained++;
          return;
        }
        const config = forCoreOs(c, base);
        if (config === undefined) return;
        const theirs = await runCase(c, base, (root) => {
          const r = runCoreOsIgnition(config, root);
          return Promise.resolve(
            r.ok
              ? undefined
              : r.log
                  .split("\n")
                  .filter((l) => /CRITICAL/.test(l))
                  .join("\n") || "failed",
          );
        });
        tally.compared++;
        assert.deepEqual(
          theirs.after.beside,
          theirs.before.beside,
          "CoreOS Ignition changed something outside the root on a case it should confine",
        );
        assert.equal(
          mine.after.error === undefined,
          theirs.after.error === undefined,
          `ours: ${mine.after.error ?? "applied"}; CoreOS: ${theirs.after.error ?? "applied"}`,
        );
        if (mine.after.error === undefined)
          assert.deepEqual(
            mine.after.root,
            theirs.after.root,
            "the tree inside the root differs from CoreOS Ignition's",
          );
      }),
      { numRuns: runs, seed, includeErrorInReport: true },
    );
    process.stdout.write(`root confinement property: ${JSON.stringify(tally)}\n`);
    // The property must have been exercised: links in most layouts, a good share applied, CoreOS compared.
    assert.ok(tally.linked >= tally.cases / 2, `only ${tally.linked} of ${tally.cases} layouts had links`);
    assert.ok(tally.applied >= tally.cases / 5, `only ${tally.applied} of ${tally.cases} configs applied`);
    if (coreos && runs >= 2000)
      assert.ok(tally.compared >= 100, `only ${tally.compared} cases compared with CoreOS Ignition`);
  });
});
