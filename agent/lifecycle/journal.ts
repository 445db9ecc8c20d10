/**
 * The journal: everything the agent knows about the host's lifecycle state, in
 * `<root>/.winfleet/journal.json`, replaced atomically (temp + fsync + rename)
 * at every transition. What is installed (and any lifecycle left part-way), the
 * run in progress with its plan and how far it got, a failure or a pending
 * reboot, and recent history are all derivable from it after any crash or
 * reboot. The run's plan, which never changes, is in a file of its own written
 * once per run (`plan-file.ts`); reading the journal puts it back, so readers
 * see one {@link Journal}. A journal of the earlier format, plan inline, is
 * read as it is. It never holds a secret: output tails are masked first.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import {
  agentStateDir,
  type ConfinedDir,
  AgentError,
  AgentErrorCode,
  errorMessage,
  readFileIn,
  STATE_DIR_NAME,
  writeFileIn,
} from "../common";
import { DISRUPTIONS, SHELLS } from "../content";
import type { LedgerFile } from "../ignition";
import { PHASES } from "./events";
import { ROLES, SECTIONS, type Step } from "./model";
import { type PlanRef, persistPlan, planRefSchema, readPlan, rememberPlan, sweepPlans } from "./plan-file";

const templateRef = z.object({ name: z.string(), version: z.string() });

const stepBase = {
  phase: z.enum(PHASES),
  component: z.string(),
  version: z.string(),
  priority: z.number(),
  finalizes: z.enum(["installed", "upgraded", "removed"]).optional(),
  from: z.string().optional(),
  disrupts: z
    .object({ lifecycle: z.enum(["install", "upgrade", "uninstall"]), what: z.array(z.enum(DISRUPTIONS)) })
    .optional(),
};

// Checked against the model's types, so a journaled plan reads back as exactly what was planned.
const stepSchema: z.ZodType<Step> = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("command"),
    ...stepBase,
    section: z.enum(SECTIONS),
    role: z.enum(ROLES),
    index: z.number().int(),
    command: z.string(),
    shell: z.enum(SHELLS),
    isolated: z.boolean(),
    timeoutSeconds: z.number(),
  }),
  z.object({ kind: z.literal("files"), ...stepBase, next: z.enum(["install", "post_upgrade"]) }),
  z.object({ kind: z.literal("remove-files"), ...stepBase }),
  z.object({ kind: z.literal("reboot"), ...stepBase, reasons: z.array(z.string()) }),
]);

const failureSchema = z.object({
  step: z.number().int(),
  component: z.string(),
  version: z.string(),
  phase: z.enum(PHASES),
  command: z.string(),
  exitCode: z.number().int().nullable(),
  timedOut: z.boolean(),
  errorTail: z.string(),
  at: z.string(),
});

const resultSchema = z.object({
  step: z.number().int(),
  exitCode: z.number().int().nullable(),
  durationMs: z.number(),
  stdoutTail: z.string(),
  stderrTail: z.string(),
  at: z.string(),
});

const runSchema = z.object({
  id: z.string(),
  kind: z.enum(["apply", "uninstall", "repair"]),
  target: templateRef.nullable(),
  /** The content directory bundle:/// files are read from (null for uninstall). */
  contentDir: z.string().nullable(),
  contentDigest: z.string().nullable(),
  /** Non-secret variables the run's commands get (template and agent config). */
  variables: z.record(z.string(), z.string()),
  startedAt: z.string(),
  /** The target's components in template order (what the installed list is sorted by at the end). */
  order: z.array(z.string()).default([]),
  steps: z.array(stepSchema),
  /** Index of the next step to run: every step before it is done. */
  next: z.number().int().min(0),
  /** The step running now (set before it starts, cleared when it is recorded). */
  current: z.object({ step: z.number().int(), startedAt: z.string() }).optional(),
  status: z.enum(["running", "failed", "reboot-pending", "interrupted"]),
  failure: failureSchema.optional(),
  /**
   * A requested reboot: `static` for a plan's reboot step (done = step + 1), else one asked by exit 3010 before `step`.
   */
  reboot: z
    .object({
      step: z.number().int(),
      static: z.boolean(),
      reasons: z.array(z.string()),
      requestedAt: z.string(),
      bootId: z.string().optional(),
    })
    .optional(),
  /** Reboots asked for by a command's exit code 3010, per reboot group. */
  rebootRequests: z.array(z.object({ group: z.string(), reason: z.string() })).default([]),
  /** The last results, newest last (bounded). */
  results: z.array(resultSchema).default([]),
});

const historySchema = z.object({ at: z.string(), event: z.string(), detail: z.string() });

/**
 * Where a drain of the node stands. It outlives the run that started it (a superseding run keeps
 * it) until the host has converged and the node is uncordoned.
 */
const drainSchema = z.object({
  /** cordoning: about to cordon; evicting: cordoned, pods leaving; drained: nothing left; skipped: nothing to drain. */
  state: z.enum(["cordoning", "evicting", "drained", "skipped"]),
  /** The agent cordoned the node (false: it was cordoned before the drain, and is left so). */
  cordoned: z.boolean(),
  startedAt: z.string(),
  /** What disrupts: why the drain. */
  reasons: z.array(z.string()),
  /** Pods evicted so far (`namespace/name`). */
  evicted: z.array(z.string()).default([]),
  /** Pods in the way at the last look, and why. */
  waiting: z.array(z.object({ pod: z.string(), why: z.string() })).default([]),
  /** Why nothing was drained (skipped). */
  note: z.string().optional(),
});

const journalSchema = z.object({
  format: z.literal(1),
  installed: z.array(
    z.object({
      name: z.string(),
      version: z.string(),
      pending: z.enum(["install", "post_upgrade", "upgrade", "remove"]).optional(),
      since: z.string(),
    }),
  ),
  /** The template the host last converged to. */
  applied: z
    .object({
      template: templateRef,
      contentDigest: z.string().nullable(),
      variables: z.record(z.string(), z.string()),
      at: z.string(),
    })
    .optional(),
  run: runSchema.optional(),
  /** A drain of the node that has not ended with its uncordon yet. */
  drain: drainSchema.optional(),
  /** Set by `uninstall` when it finished. */
  uninstalledAt: z.string().optional(),
  history: z.array(historySchema).default([]),
});

/** The journal's contents. */
export type Journal = z.infer<typeof journalSchema>;
/** The run in progress. */
export type Run = z.infer<typeof runSchema>;
/** Where a drain stands. */
export type DrainRecord = z.infer<typeof drainSchema>;
/** A recorded failure. */
export type Failure = z.infer<typeof failureSchema>;
/** A recorded step result. */
export type StepResult = z.infer<typeof resultSchema>;

const HISTORY_LIMIT = 200;
const RESULTS_LIMIT = 50;

/** Where the agent keeps its state under a root (its path, for messages and readers). */
export function stateDir(root: string): string {
  return join(root, STATE_DIR_NAME);
}

/** The state directory under a root as the agent reaches it: through the no-follow walk, refused when not its own. */
export function stateOf(root: string): ConfinedDir {
  return agentStateDir(root);
}

/** The engine's ledger under a root (shared with `ignition apply`), reached through the state directory. */
export function ledgerPath(root: string): LedgerFile {
  const name = "ignition-ledger.json";
  return { path: join(stateDir(root), name), use: (fn) => stateOf(root).use((dir) => fn(join(dir, name))) };
}

/** An empty journal. */
export function emptyJournal(): Journal {
  return { format: 1, installed: [], history: [] };
}

/** Reads the journal; a missing one is empty, a corrupt one is an error that changes nothing. */
export async function readJournal(root: string): Promise<Journal> {
  const dir = stateOf(root);
  const file = join(dir.path, "journal.json");
  // The plan file of a run that just ended may go between reading the journal and reading the plan: read again.
  for (let attempt = 1; ; attempt++) {
    let bytes: Buffer | undefined;
    try {
      bytes = await readFileIn(dir, "journal.json");
    } catch (e) {
      if (e instanceof AgentError) throw e;
      throw new AgentError(AgentErrorCode.FetchFailed, `cannot read the journal ${file}: ${errorMessage(e)}`);
    }
    if (bytes === undefined) return emptyJournal();
    const text = bytes.toString("utf8");
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw corrupt(file, `not valid JSON (${(e as Error).message})`);
    }
    const stored = storedRun(doc);
    let ref: PlanRef | undefined;
    if (stored?.plan !== undefined) {
      const parsedRef = planRefSchema.safeParse(stored.plan);
      if (!parsedRef.success || typeof stored.id !== "string")
        throw corrupt(file, `run.plan: ${parsedRef.error?.issues[0]?.message ?? "the run has no id"}`);
      ref = parsedRef.data;
      const plan = await readPlan(dir, stored.id, ref);
      if ("missing" in plan) {
        if (attempt < 3) continue;
        throw corrupt(file, `run.plan: its plan file ${ref.file} is missing`);
      }
      if ("problem" in plan) throw corrupt(file, `run.plan: ${plan.problem}`);
      delete stored.plan;
      stored.steps = plan.steps;
    }
    const parsed = journalSchema.safeParse(doc);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      throw corrupt(file, `${first?.path.join(".") || "(root)"}: ${first?.message ?? "unexpected shape"}`);
    }
    const run = parsed.data.run;
    if (run && ref) rememberPlan(dir, run.id, run.steps, ref);
    return parsed.data;
  }
}

/** The journal document's run, to put its plan back in (undefined when there is none to look at). */
function storedRun(doc: unknown): Record<string, unknown> | undefined {
  if (typeof doc !== "object" || doc === null) return undefined;
  const run = (doc as Record<string, unknown>).run;
  return typeof run === "object" && run !== null && !Array.isArray(run) ? (run as Record<string, unknown>) : undefined;
}

function corrupt(file: string, why: string): AgentError {
  return new AgentError(
    AgentErrorCode.InvalidInput,
    `the journal ${file} is corrupt: ${why}. Nothing was changed. Move it aside to let the agent start over from what the host has (the recorded components in ${join(file, "..", "components")} stay).`,
  );
}

let writes = 0;

/**
 * Replaces the journal atomically, keeping its history and results bounded.
 * A run's plan goes to its plan file first, the first time the run is written.
 */
export async function writeJournal(root: string, journal: Journal): Promise<void> {
  const dir = stateOf(root);
  const bounded: Journal = {
    ...journal,
    history: journal.history.slice(-HISTORY_LIMIT),
    ...(journal.run ? { run: { ...journal.run, results: journal.run.results.slice(-RESULTS_LIMIT) } } : {}),
  };
  let stored: unknown = bounded;
  let plan: { ref: PlanRef; written: boolean } | undefined;
  if (bounded.run) {
    plan = await persistPlan(dir, bounded.run.id, bounded.run.steps);
    if (plan?.written) crashSeam(++writes); // the plan is on disk and no journal refers to it yet
    // JSON leaves out an undefined field: the steps are in the plan file only.
    if (plan) stored = { ...bounded, run: { ...bounded.run, steps: undefined, plan: plan.ref } };
  }
  await writeFileIn(dir, "journal.json", `${JSON.stringify(stored, null, 1)}\n`, { mode: 0o600 });
  crashSeam(++writes);
  eventSeam(bounded.history.at(-1));
  await sweepPlans(dir, plan?.ref.file ?? null);
}

/** Adds a history entry. */
export function remember(journal: Journal, event: string, detail: string, at: string): Journal {
  return { ...journal, history: [...journal.history, { at, event, detail }] };
}

// Tests set WINFLEET_TEST_CRASH_AT=<n> to SIGKILL the agent's whole process
// group right after its n-th durable write (a journal, or a run's plan before
// the journal that refers to it): a crash at every transition. With
// WINFLEET_TEST_CRASH_COUNTER=<file> the count runs across processes (an
// install that stops for a reboot and continues in the next process).
// Tests set WINFLEET_TEST_CRASH_AFTER=<history event>[#<n>] to SIGKILL the agent the same way right after
// the journal that first records the n-th such event (default the first) is on disk: a crash at one named
// transition, such as a drain's `cordoned` or its second `pod-evicted`.
let lastEntry = "";
let eventsSeen = 0;
function eventSeam(entry: { at: string; event: string; detail: string } | undefined): void {
  const spec = process.env.WINFLEET_TEST_CRASH_AFTER;
  if (spec === undefined || entry === undefined) return;
  const key = `${entry.at}\0${entry.event}\0${entry.detail}`;
  if (key === lastEntry) return;
  lastEntry = key;
  const [event, nth = "1"] = spec.split("#");
  if (entry.event !== event || ++eventsSeen !== Number(nth)) return;
  try {
    process.kill(-process.pid, "SIGKILL");
  } catch {
    process.kill(process.pid, "SIGKILL");
  }
}

function crashSeam(count: number): void {
  const at = process.env.WINFLEET_TEST_CRASH_AT;
  if (at === undefined) return;
  const counter = process.env.WINFLEET_TEST_CRASH_COUNTER;
  if (counter !== undefined) {
    const total = (Number(existsSync(counter) ? readFileSync(counter, "utf8") : "0") || 0) + 1;
    writeFileSync(counter, String(total));
    count = total;
  }
  if (Number(at) !== count) return;
  try {
    process.kill(-process.pid, "SIGKILL");
  } catch {
    process.kill(process.pid, "SIGKILL");
  }
}
