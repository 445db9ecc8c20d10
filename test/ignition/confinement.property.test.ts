/**
 * Root confinement as a property. For random root layouts (directories, files,
 * absolute and relative links in the parent chain, pointing inside the root,
 * at a sentinel tree beside it, or climbing past the host's `/`; hard links to
 * the sentinel's files; a state directory that is a link, holds links or hard
 * links out of the root, or is another user's) and random configs of every
 * spec version the engine reads, applying — with the ledger in the state
 * directory — and then every writer of the agent's state never changes
 * anything outside the root: the sentinel and everything else beside the root
 * are hashed before and after (bytes, modes, link targets, link counts; a
 * sentinel file hard-linked into the root may only lose the root's name). A
 * failed apply leaves the root as it was (the state directory aside). Every
 * CLI_EVERY-th case is run again through the CLI as it ships (the bundle):
 * `winfleet-agent ignition apply --root`, then `winfleet-agent apply` of a
 * small content, with the same checks. Where CoreOS Ignition is installed,
 * every COMPARE_EVERY-th case whose result CoreOS decides from the root alone
 * (see coreosConfined; nor hard links or the state directory, where winfleet's
 * own rules apply) is applied by it too, to an identical root at the same path,
 * and the trees must match (or both applies fail).
 *
 * 2,000 cases from a fixed seed by default; WINFLEET_PROPERTY_SEED=<n> or
 * =random, WINFLEET_PROPERTY_RUNS=<n>, WINFLEET_PROPERTY_COMPARE_EVERY=<n> and
 * WINFLEET_PROPERTY_CLI_EVERY=<n> for longer, nightly-style runs (the seed is
 * printed, and a failure names it with fast-check's shrunk case).
 */
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import fc from "fast-check";
import { errorMessage } from "../../agent/common/errors";
import { applyIgnition, parseIgnition, renderV3, rootedMapper } from "../../agent/ignition";
import { ledgerPath } from "../../agent/lifecycle/journal";
import { IGNITION_OWN_FILES, prepareRoot, runCoreOsIgnition } from "./coreos";
import {
  type ConfinementCase,
  configOf,
  confinementCase,
  coreosConfined,
  touchesAgentRules,
  writeLayout,
  writeSentinel,
} from "./corpus-confinement";
import { stateRound } from "./state-round";
import {
  agent,
  agentBundle,
  IGNITION,
  locate,
  scratchDir,
  snapshotTree,
  type TreeNode,
  writeContent,
} from "../support";

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
/** A CLI run takes about half a second: one case in this many also runs through the CLI. */
const CLI_EVERY = Math.max(1, Number(process.env.WINFLEET_PROPERTY_CLI_EVERY ?? 50));

const work = scratchDir("winfleet-confine-prop-");
let bundle: string;
let content: string;
before(async () => {
  bundle = await agentBundle(work);
  content = writeContent(
    [{ name: "c1", version: "1.0.0", files: { "/a/app.txt": "app" }, metadata: { install: { commands: ["true"] } } }],
    [{ name: "t", version: "1.0.0", packages: ["c1_1.0.0"] }],
    join(work, "content"),
  );
});

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

/** Cases whose layout and config leave the state directory alone run the state writers one time in this many. */
const STATE_EVERY = 10;

async function ours(c: ConfinementCase, base: string, root: string, n: number): Promise<string | undefined> {
  let error: string | undefined;
  try {
    const { config } = parseIgnition(JSON.stringify(configOf(c, base)));
    // The ledger in the state directory, as the agent keeps it.
    await applyIgnition(config, { mapper: rootedMapper(root), durable: false, ledgerPath: ledgerPath(root) });
  } catch (e) {
    error = errorMessage(e);
  }
  // Whatever the apply did, every other writer of the state directory runs too (the checks follow).
  if (touchesAgentRules(c) || n % STATE_EVERY === 0) await stateRound(root);
  return error;
}

/** The same case through the CLI as it ships: `ignition apply --root`, then the lifecycle's `apply`. */
async function throughCli(c: ConfinementCase, base: string, root: string): Promise<string | undefined> {
  const file = join(work, "cli-config.ign"); // beside the case, not in what is compared
  writeFileSync(file, JSON.stringify(configOf(c, base)));
  const ignition = await agent(["ignition", "apply", "--root", root, file], { entry: bundle });
  await agent(["apply", "--content", content, "--template", "t", "--root", root], { entry: bundle });
  return ignition.code === 0 ? undefined : ignition.stderr.trim() || `exit ${String(ignition.code)}`;
}

/**
 * The names that share an inode with a file the case's layout hard-linked into the root: beside the
 * root (the sentinel's `secret` is also `d/hard`) and in it. Their link count is the inode's, which the
 * root's names change (one made there, or replaced); every other field must stay as it was.
 */
function sharedInodes(c: ConfinementCase): { beside: Set<string>; root: Set<string> } {
  const beside = new Set<string>();
  const root = new Set<string>();
  for (const n of c.layout) {
    if (n.type !== "hardlink") continue;
    root.add(n.path.slice(1));
    if (n.to === "/secret") beside.add("outside/secret").add("outside/d/hard");
    else beside.add("outside/d/keep");
  }
  return { beside, root };
}

/** `after` equals `before`, but for the link counts of `shared` names. */
function assertUnchanged(before: TreeNode[], after: TreeNode[], shared: ReadonlySet<string>, what: string): void {
  const strip = (n: TreeNode): TreeNode => (shared.has(n.path) ? { ...n, nlink: undefined } : n);
  assert.deepEqual(after.map(strip), before.map(strip), what);
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
    const tally = { cases: 0, applied: 0, linked: 0, compared: 0, chained: 0, state: 0, cli: 0 };
    await fc.assert(
      fc.asyncProperty(confinementCase, async (c) => {
        const n = tally.cases++;
        const base = join(work, "case");
        const shared = sharedInodes(c);
        const mine = await runCase(c, base, (root) => ours(c, base, root, n));
        assertUnchanged(mine.before.beside, mine.after.beside, shared.beside, "something outside the root changed");
        if (mine.after.error !== undefined)
          assertUnchanged(
            mine.before.root,
            mine.after.root,
            shared.root,
            `the apply failed (${mine.after.error}) but changed the root`,
          );
        else tally.applied++;
        if (c.layout.some((l) => l.type === "symlink")) tally.linked++;
        if (touchesAgentRules(c)) tally.state++;
        if (n % CLI_EVERY === 0) {
          tally.cli++;
          const cli = await runCase(c, base, (root) => throughCli(c, base, root));
          assertUnchanged(
            cli.before.beside,
            cli.after.beside,
            shared.beside,
            "the CLI changed something outside the root",
          );
        }
        if (!coreos || n % COMPARE_EVERY !== 0) return;
        if (!coreosConfined(c, base) || touchesAgentRules(c)) {
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
    assert.ok(tally.state >= tally.cases / 5, `only ${tally.state} of ${tally.cases} cases met the state directory`);
    if (coreos && runs >= 2000)
      assert.ok(tally.compared >= 100, `only ${tally.compared} cases compared with CoreOS Ignition`);
  });
});
