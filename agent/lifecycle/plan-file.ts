/**
 * A run's plan, in a file of its own. The plan never changes once the run is
 * planned, yet it is most of a run's bytes: kept in the journal, it was
 * rewritten at every step, and the bytes written grew with the square of the
 * steps. So it is written once per run, atomically and fsynced, to
 * `plan-<run id>.json` before the first journal that refers to it, and the
 * journal refers to it by file name, step count and SHA-256: a plan file left
 * by a crash, or by another run, can never be taken for this run's.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { type ConfinedDir, errorMessage, readdirIn, readFileIn, removeIn, writeFileIn } from "../common";
import type { Step } from "./model";

/** What the journal keeps of its run's plan. */
export const planRefSchema = z.object({
  file: z.string().regex(/^plan-[A-Za-z0-9._-]+\.json$/),
  steps: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

/** The journal's reference to its run's plan file. */
export type PlanRef = z.infer<typeof planRefSchema>;

/** The plan file names this process last wrote or read, per state directory, with the steps they hold. */
const known = new Map<string, { readonly id: string; readonly steps: readonly Step[]; readonly ref: PlanRef }>();
/** The plan file each state directory's journal last referred to (null: none), as this process wrote it. */
const referenced = new Map<string, string | null>();

/** Run ids the agent makes are file-name safe; a journal from elsewhere may hold another (its plan stays inline). */
function fileFor(id: string): string | undefined {
  return /^[A-Za-z0-9._-]{1,100}$/.test(id) ? `plan-${id}.json` : undefined;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * Makes sure run `id`'s plan is on disk in `dir` and returns its reference
 * (`written` when this call wrote it), or undefined when the plan stays in the
 * journal: a run id that is no file name, or steps that differ from the plan
 * already written for the same run (never, as runs are made; the journal
 * holding them is then still right).
 */
export async function persistPlan(
  dir: ConfinedDir,
  id: string,
  steps: readonly Step[],
): Promise<{ ref: PlanRef; written: boolean } | undefined> {
  const cached = known.get(dir.path);
  if (cached?.id === id && cached.steps === steps) return { ref: cached.ref, written: false };
  const file = fileFor(id);
  if (file === undefined) return undefined;
  const text = planText(id, steps);
  const ref: PlanRef = { file, steps: steps.length, sha256: sha256(text) };
  if (cached?.id === id) {
    if (cached.ref.sha256 !== ref.sha256) return undefined;
    known.set(dir.path, { id, steps, ref });
    return { ref, written: false };
  }
  await writeFileIn(dir, file, text, { mode: 0o600 });
  known.set(dir.path, { id, steps, ref });
  return { ref, written: true };
}

function planText(id: string, steps: readonly Step[]): string {
  return `${JSON.stringify({ format: 1, run: id, steps }, null, 1)}\n`;
}

/** Why a plan file cannot be used (the journal names it), or its steps. */
export type PlanRead = { readonly steps: unknown[] } | { readonly missing: true } | { readonly problem: string };

/** Reads run `id`'s plan through the journal's reference, checking it is that run's and whole. */
export async function readPlan(dir: ConfinedDir, id: string, ref: PlanRef): Promise<PlanRead> {
  const cached = known.get(dir.path);
  if (cached?.id === id && cached.ref.file === ref.file && cached.ref.sha256 === ref.sha256)
    return { steps: [...cached.steps] };
  if (ref.file !== fileFor(id)) return { problem: `its plan file ${ref.file} is not named for run ${id}` };
  let text: string;
  try {
    const bytes = await readFileIn(dir, ref.file);
    if (bytes === undefined) return { missing: true };
    text = bytes.toString("utf8");
  } catch (e) {
    return { problem: `cannot read its plan file ${ref.file}: ${errorMessage(e)}` };
  }
  if (sha256(text) !== ref.sha256)
    return { problem: `its plan file ${ref.file} is not the one it refers to (SHA-256)` };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return { problem: `its plan file ${ref.file} is not valid JSON (${(e as Error).message})` };
  }
  const parsed = planFileSchema.safeParse(doc);
  if (!parsed.success || parsed.data.run !== id || parsed.data.steps.length !== ref.steps)
    return { problem: `its plan file ${ref.file} is not run ${id}'s plan of ${ref.steps} steps` };
  return { steps: parsed.data.steps };
}

const planFileSchema = z.object({ format: z.literal(1), run: z.string(), steps: z.array(z.unknown()) });

/** Notes the steps a journal read gave for run `id`, so writing that run's journal again writes no plan. */
export function rememberPlan(dir: ConfinedDir, id: string, steps: readonly Step[], ref: PlanRef): void {
  known.set(dir.path, { id, steps, ref });
}

/**
 * After a journal referring to `keep` (or to no plan file) is on disk: removes
 * every other plan file, once each time the reference changes. Best effort: a
 * plan file left over is never read for another run.
 */
export async function sweepPlans(dir: ConfinedDir, keep: string | null): Promise<void> {
  if (referenced.get(dir.path) === keep) return;
  referenced.set(dir.path, keep);
  await Promise.resolve();
  let names: string[];
  try {
    names = readdirIn(dir);
  } catch {
    return;
  }
  for (const n of names.filter((x) => x.startsWith("plan-") && x.endsWith(".json") && x !== keep)) {
    try {
      removeIn(dir, n);
    } catch {
      // best effort: a plan file left over is never read for another run
    }
  }
}
