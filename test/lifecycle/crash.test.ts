/**
 * kill -9 of the agent's whole process group at every journal transition of a
 * full install (through the crash seam, counted across the processes of an
 * install that stops for a reboot) and at random moments: every restart must
 * converge to the same tree as an uninterrupted install, run every step at
 * least once, and never run again a step the journal had recorded done.
 * Every agent here is the single-file bundle that ships (dist/agent), not the
 * TypeScript sources through tsx: what is crash-tested is what is released.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  agent,
  agentBundle,
  type AgentOptions,
  applyUntilSettled,
  hostTree,
  Rng,
  scratchDir,
  tempDir,
  writeContent,
} from "../support";

// Every command appends its own name to runs.log, so the log says which steps ran and how often.
const cmd = (id: string): string => `echo "${id}" >> "$WINFLEET_ROOT/runs.log"`;
const content = writeContent(
  ["a", "b", "c", "d"].map((name, i) => ({
    name,
    version: "1",
    files: { [`/opt/${name}/config`]: `config of ${name}\n`, [`/opt/${name}/bin/run.sh`]: `#!/bin/sh\necho ${name}\n` },
    metadata: {
      install: {
        priority: [10, 10, 20, 30][i],
        lprecmds: i === 0 ? [cmd(`${name} lprecmds 0`)] : [],
        commands: [cmd(`${name} commands 0`), cmd(`${name} commands 1`)],
        lpstcmds: i === 2 ? [cmd(`${name} lpstcmds 0`)] : [],
        reboot: i === 1 ? "yes" : "no",
      },
    },
  })),
  [{ name: "crashy", version: "1", packages: ["a_1", "b_1", "c_1", "d_1"] }],
);
const ALL = [
  "a lprecmds 0",
  "a commands 0",
  "a commands 1",
  "b commands 0",
  "b commands 1",
  "c commands 0",
  "c commands 1",
  "c lpstcmds 0",
  "d commands 0",
  "d commands 1",
];
const args = (root: string): string[] => ["--content", content, "--template", "crashy", "--root", root];
const skipLog = (rel: string): boolean => rel === "runs.log";

interface PlanView {
  steps: { kind: string; command?: string }[];
}
interface JournalView {
  run?: { next: number; plan: { file: string } };
  installed: unknown[];
}

/** Commands the journal records as done (steps before `next`, in the plan file it refers to). */
function doneCommands(root: string): string[] {
  const file = join(root, ".winfleet", "journal.json");
  if (!existsSync(file)) return [];
  const j = JSON.parse(readFileSync(file, "utf8")) as JournalView; // must always parse: writes are atomic
  if (!j.run) return ALL; // finished
  // The plan is on disk before any journal refers to it.
  const plan = JSON.parse(readFileSync(join(root, ".winfleet", j.run.plan.file), "utf8")) as PlanView;
  return plan.steps
    .slice(0, j.run.next)
    .flatMap((s) => (s.kind === "command" && s.command ? [/echo "([^"]*)"/.exec(s.command)?.[1] ?? ""] : []));
}

function runCounts(root: string): Map<string, number> {
  const counts = new Map<string, number>();
  const log = join(root, "runs.log");
  for (const line of existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : [])
    counts.set(line, (counts.get(line) ?? 0) + 1);
  return counts;
}

function checkConverged(
  root: string,
  reference: Record<string, string>,
  doneAtCrash: readonly string[],
  where: string,
): void {
  assert.deepEqual(hostTree(root, skipLog), reference, `${where}: the tree differs from an uninterrupted install`);
  const counts = runCounts(root);
  for (const id of ALL) assert.ok((counts.get(id) ?? 0) >= 1, `${where}: ${id} never ran`);
  for (const id of doneAtCrash)
    assert.equal(counts.get(id), 1, `${where}: ${id} was recorded done, yet ran ${counts.get(id)} times`);
  for (const [id, n] of counts) assert.ok(n <= 2, `${where}: ${id} ran ${n} times`);
}

const roots: string[] = [];
const fresh = (): string => {
  const r = tempDir("crash-root-");
  roots.push(r);
  return r;
};

const scratch = scratchDir("crash-bundle-");
/** The released agent: its bundle's entry, with a code cache of its own. */
let shipped: AgentOptions;

describe("crashes during a full install", () => {
  let reference: Record<string, string>;
  before(async () => {
    shipped = { entry: await agentBundle(scratch), env: { WINFLEET_CODE_CACHE: join(scratch, "code-cache") } };
    assert.match(shipped.entry ?? "", /\/dist\/agent\/bin\/winfleet-agent\.js$/);
    const version = await agent(["--version"], shipped);
    assert.equal(version.code, 0, `the bundle does not run: ${version.stderr}`);
    const root = fresh();
    const r = await applyUntilSettled(args(root), shipped);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.reboots, 1);
    reference = hostTree(root, skipLog);
    assert.deepEqual(
      [...runCounts(root).values()],
      ALL.map(() => 1),
    );
  });
  after(() => {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

  it("kill -9 at every durable transition (plan, journal): each restart converges, nothing finished runs again", async (t) => {
    let transitions = 0;
    for (let n = 1; n < 200; n++) {
      const root = fresh();
      const counter = join(root, "..", `${root.split("/").pop() ?? "x"}.count`);
      const env = { WINFLEET_TEST_CRASH_AT: String(n), WINFLEET_TEST_CRASH_COUNTER: counter };
      let crashed = false;
      // The install, crashing at transition n wherever it falls (before or after its reboot).
      for (let i = 0; i < 5; i++) {
        const r = await agent(["apply", ...args(root)], { ...shipped, env: { ...shipped.env, ...env } });
        if (r.signal === "SIGKILL") {
          crashed = true;
          break;
        }
        assert.ok(r.code === 0 || r.code === 194, `transition ${n}: apply exited ${String(r.code)}: ${r.stderr}`);
        if (r.code === 0) break;
      }
      rmSync(counter, { force: true });
      if (!crashed) {
        transitions = n - 1;
        break;
      }
      const done = doneCommands(root);
      const settled = await applyUntilSettled(args(root), shipped);
      assert.equal(settled.code, 0, `after a crash at transition ${n}: ${settled.stderr}`);
      checkConverged(root, reference, done, `crash at transition ${n}`);
      rmSync(root, { recursive: true, force: true });
    }
    assert.ok(transitions >= 2 * ALL.length, `only ${transitions} journal transitions were crashed`);
    t.diagnostic(`crashed at each of ${transitions} journal transitions, running ${shipped.entry ?? ""}`);
  });

  it("kill -9 at random moments: each restart converges, nothing finished runs again", async () => {
    const rng = new Rng(20261122);
    for (let round = 0; round < 8; round++) {
      const root = fresh();
      const delay = rng.int(900);
      let pid = 0;
      const timer = setTimeout(() => {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // already finished
        }
      }, delay);
      const first = await agent(["apply", ...args(root)], { ...shipped, onSpawn: (p) => (pid = p) });
      clearTimeout(timer);
      const done = doneCommands(root);
      const settled = await applyUntilSettled(args(root), shipped);
      assert.equal(
        settled.code,
        0,
        `round ${round} (kill after ${delay} ms, first run ${first.signal ?? String(first.code)}): ${settled.stderr}`,
      );
      checkConverged(root, reference, done, `kill after ${delay} ms`);
      rmSync(root, { recursive: true, force: true });
    }
  });
});
