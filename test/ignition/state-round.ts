/**
 * Every writer of the agent's state directory, run once in process against a
 * root: the lock and its key, the journal with a run (and so its plan file),
 * a component record and the pruning of records, a step log, the accepted
 * versions, the report queue and the broker's process records. Each may fail
 * (a state directory that is a link or another user's is refused); none may
 * change anything outside the root.
 */
import { agentStateDir, writeFileIn } from "../../agent/common";
import type { CatalogComponent } from "../../agent/content";
import { acquireLock } from "../../agent/lifecycle/lock";
import { emptyJournal, readJournal, stateOf, writeJournal } from "../../agent/lifecycle/journal";
import { pruneRecords, record } from "../../agent/lifecycle/store";
import { recordRelease } from "../../agent/release/anti-rollback";
import { ReportQueue } from "../../agent/report/queue";
import { silentLogger } from "../../agent/common/log";

const component = {
  metadata: { name: "c", version: "1", variables: {}, files: [] },
  ignition: '{"ignition":{"version":"3.3.0"}}\n',
} as unknown as CatalogComponent;

const step = {
  kind: "reboot",
  phase: "install",
  component: "c",
  version: "1",
  priority: 0,
  reasons: ["x"],
} as const;

/** Runs every state writer against `root`; returns the errors (refusals are expected for hostile roots). */
export async function stateRound(root: string): Promise<string[]> {
  const errors: string[] = [];
  const attempt = async (what: string, work: () => unknown): Promise<void> => {
    try {
      await work();
    } catch (e) {
      errors.push(`${what}: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  await attempt("lock", async () =>
    (await acquireLock(root, "property", { identity: () => Promise.resolve("x") })).release(),
  );
  await attempt("journal", async () => {
    const at = new Date(0).toISOString();
    await writeJournal(root, {
      ...emptyJournal(),
      run: {
        id: `run-${process.pid}`,
        kind: "apply",
        target: { name: "t", version: "1" },
        contentDir: null,
        contentDigest: null,
        variables: {},
        startedAt: at,
        order: ["c"],
        steps: [step],
        next: 0,
        status: "running",
        rebootRequests: [],
        results: [],
      },
    });
    await readJournal(root);
    await writeJournal(root, emptyJournal()); // the run ends: its plan file is swept
  });
  await attempt("record", () => record(root, component));
  await attempt("prune", () => pruneRecords(root, emptyJournal()));
  await attempt("step log", () => writeFileIn(stateOf(root).sub("logs", "run"), "001-c.log", "log\n"));
  await attempt("accepted versions", () =>
    recordRelease(root, "content", { keyId: "a".repeat(64), version: "1.0.0" }, false),
  );
  await attempt("report queue", () => {
    const q = new ReportQueue(agentStateDir(root).sub("report-queue"), {
      limit: 4,
      nodeName: "n",
      log: silentLogger,
    });
    q.append({ type: "Normal", reason: "Applied", message: "m", at: new Date(0).toISOString() } as never);
  });
  await attempt("process record", () => writeFileIn(stateOf(root).sub("broker", "processes"), "p.json", "{}"));
  return errors;
}
