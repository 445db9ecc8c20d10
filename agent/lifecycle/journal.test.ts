import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AgentError } from "../common";
import { type Journal, type Run, readJournal, stateDir, writeJournal } from "./journal";
import type { Step } from "./model";

const base = mkdtempSync(join(tmpdir(), "journal-test-"));
after(() => rmSync(base, { recursive: true, force: true }));
let roots = 0;
const fresh = (): string => {
  const root = join(base, `root-${roots++}`);
  mkdirSync(root);
  return root;
};

const steps = (n: number): Step[] =>
  Array.from({ length: n }, (_, i) => ({
    kind: "command",
    phase: "install",
    component: `c${i}`,
    version: "1",
    priority: 0,
    section: "install",
    role: "commands",
    index: 0,
    command: `echo ${i}`,
    shell: "sh",
    isolated: false,
    timeoutSeconds: 60,
  }));

const run = (id: string, n: number): Run => ({
  id,
  kind: "apply",
  target: { name: "t", version: "1" },
  contentDir: "/content",
  contentDigest: "d",
  variables: { REGION: "west" },
  startedAt: "2026-01-01T00:00:00.000Z",
  order: [],
  steps: steps(n),
  next: 0,
  status: "running",
  rebootRequests: [],
  results: [],
});

const journalWith = (r: Run | undefined): Journal => ({
  format: 1,
  installed: [{ name: "c0", version: "1", since: "2026-01-01T00:00:00.000Z" }],
  ...(r ? { run: r } : {}),
  history: [{ at: "2026-01-01T00:00:00.000Z", event: "apply-planned", detail: "t 1" }],
});

const onDisk = (root: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(stateDir(root), "journal.json"), "utf8")) as Record<string, unknown>;
const planFiles = (root: string): string[] => readdirSync(stateDir(root)).filter((n) => n.startsWith("plan-"));

describe("the journal and its run's plan file", () => {
  it("keeps the plan in a file of its own, written once per run, and reads the journal back whole", async () => {
    const root = fresh();
    let journal = journalWith(run("20260101T000000-abc123", 40));
    await writeJournal(root, journal);
    const stored = onDisk(root).run as Record<string, unknown>;
    assert.equal(stored.steps, undefined, "the steps are not in the journal");
    assert.deepEqual(stored.plan, {
      file: "plan-20260101T000000-abc123.json",
      steps: 40,
      sha256: (stored.plan as { sha256: string }).sha256,
    });
    assert.deepEqual(planFiles(root), ["plan-20260101T000000-abc123.json"]);
    assert.deepEqual(await readJournal(root), journal);

    const plan = statSync(join(stateDir(root), "plan-20260101T000000-abc123.json"));
    for (let i = 1; i <= 5; i++) {
      journal = { ...journal, run: { ...(journal.run as Run), next: i } };
      await writeJournal(root, journal);
    }
    const again = statSync(join(stateDir(root), "plan-20260101T000000-abc123.json"));
    assert.deepEqual([again.ino, again.mtimeMs], [plan.ino, plan.mtimeMs], "the plan file was written once");
    assert.deepEqual(await readJournal(root), journal);

    await writeJournal(root, journalWith(undefined));
    assert.deepEqual(planFiles(root), [], "the plan file goes with its run");
  });

  it("reads a journal of the earlier format, plan inline, and writes it back in the new one", async () => {
    const root = fresh();
    const journal = journalWith({ ...run("20260101T000000-def456", 3), next: 2 });
    mkdirSync(stateDir(root));
    // As the earlier agent wrote it: the whole run, steps included, in journal.json.
    writeFileSync(join(stateDir(root), "journal.json"), `${JSON.stringify(journal, null, 1)}\n`);
    assert.deepEqual(await readJournal(root), journal);
    await writeJournal(root, await readJournal(root));
    assert.equal((onDisk(root).run as Record<string, unknown>).steps, undefined);
    assert.deepEqual(planFiles(root), ["plan-20260101T000000-def456.json"]);
    assert.deepEqual(await readJournal(root), journal);
  });

  it("never pairs a run with another run's plan, a changed plan or none", async () => {
    // Journals and plan files are made by hand here, as another process (or a crash) leaves them.
    const made = async (id: string, n: number): Promise<{ root: string; dir: string }> => {
      const root = fresh();
      await writeJournal(root, journalWith(run(id, n)));
      const dir = join(base, `copy-${roots++}`);
      mkdirSync(join(dir, ".winfleet"), { recursive: true });
      for (const f of readdirSync(stateDir(root)))
        writeFileSync(join(dir, ".winfleet", f), readFileSync(join(stateDir(root), f)));
      return { root, dir };
    };
    const corrupt = (why: RegExp) => (e: unknown) => {
      assert.ok(e instanceof AgentError, String(e));
      assert.match(e.message, /the journal .*journal\.json is corrupt: run\.plan: /);
      assert.match(e.message, why);
      return true;
    };

    const a = await made("20260101T000000-aaaaaa", 5);
    const b = await made("20260101T000000-bbbbbb", 5);
    // Run b's plan file under run a's name: the digest and the run id inside both differ.
    writeFileSync(
      join(a.dir, ".winfleet", "plan-20260101T000000-aaaaaa.json"),
      readFileSync(join(b.dir, ".winfleet", "plan-20260101T000000-bbbbbb.json")),
    );
    await assert.rejects(readJournal(a.dir), corrupt(/not the one it refers to/));

    const c = await made("20260101T000000-cccccc", 5);
    const planC = join(c.dir, ".winfleet", "plan-20260101T000000-cccccc.json");
    writeFileSync(planC, readFileSync(planC, "utf8").replace("echo 3", "echo 9"));
    await assert.rejects(readJournal(c.dir), corrupt(/not the one it refers to/));

    const d = await made("20260101T000000-dddddd", 5);
    rmSync(join(d.dir, ".winfleet", "plan-20260101T000000-dddddd.json"));
    await assert.rejects(readJournal(d.dir), corrupt(/plan-20260101T000000-dddddd\.json is missing/));

    const e = await made("20260101T000000-eeeeee", 5);
    const journalE = join(e.dir, ".winfleet", "journal.json");
    writeFileSync(
      journalE,
      readFileSync(journalE, "utf8").replace('"plan-20260101T000000-eeeeee.json"', '"plan-x.json"'),
    );
    await assert.rejects(readJournal(e.dir), corrupt(/plan-x\.json is not named for run 20260101T000000-eeeeee/));
    assert.ok(existsSync(journalE), "nothing was changed");
  });

  it("sweeps a plan file a crash left behind once a journal refers to another", async () => {
    const root = fresh();
    mkdirSync(stateDir(root));
    writeFileSync(join(stateDir(root), "plan-20250101T000000-000000.json"), "{}\n");
    await writeJournal(root, journalWith(run("20260101T000000-ffffff", 2)));
    assert.deepEqual(planFiles(root), ["plan-20260101T000000-ffffff.json"]);
  });
});
