/**
 * Applying a parsed config to a host: resolve every resource, plan every change
 * against the current state, and only then touch the disk. An invalid or
 * conflicting config therefore writes nothing; a re-apply of an applied config
 * plans no operation at all.
 */
import { mkdirSync } from "node:fs";
import { AtomicWriteBatch, AgentError, AgentErrorCode, errorMessage } from "../common";
import { type FetchOptions, resolveResource } from "./fetch";
import { type Ledger, type LedgerFile, emptyLedger, readLedger, updateLedger } from "./ledger";
import type { FileEntry, IgnitionConfig } from "./model";
import type { PathMapper } from "./paths";
import { type ApplyPlan, type Operation, type ResolvedFile, planApply } from "./plan";
import { type RootedFs, openRootedFs } from "./rooted-fs";

/** Options for {@link applyIgnition}. */
export interface ApplyOptions extends FetchOptions {
  readonly mapper: PathMapper;
  /** Where the ledger of written files lives; without one, re-apply semantics are Ignition's own. */
  readonly ledgerPath?: string | LedgerFile;
  /** fsync every file before renaming it into place. @default true */
  readonly durable?: boolean;
  /** Plan only. @default false */
  readonly dryRun?: boolean;
}

/** What an apply did. */
export interface ApplyReport {
  readonly changed: readonly string[];
  readonly unchanged: readonly string[];
  readonly operations: number;
}

/** Fetches every resource of every file; throws before anything is written. */
export async function resolveAll(config: IgnitionConfig, options: FetchOptions): Promise<Map<FileEntry, ResolvedFile>> {
  const out = new Map<FileEntry, ResolvedFile>();
  for (const f of config.files) {
    const contents = f.contents ? await resolveResource(f.contents, options) : undefined;
    const append: Buffer[] = [];
    for (const a of f.append) append.push((await resolveResource(a, options)) ?? Buffer.alloc(0));
    out.set(f, { contents, append });
  }
  return out;
}

/** Applies `config` to the host `options.mapper` describes. */
export async function applyIgnition(config: IgnitionConfig, options: ApplyOptions): Promise<ApplyReport> {
  const resolved = await resolveAll(config, options);
  const previous: Ledger = options.ledgerPath ? await readLedger(options.ledgerPath) : emptyLedger();
  const plan = await hostErrors("planning", () => planApply(config, resolved, options.mapper, previous));
  if (!options.dryRun) {
    await hostErrors("applying", () => executePlan(plan, options.durable ?? true));
    // Only this config's records are written: the ledger is appended to, not rewritten.
    if (options.ledgerPath) await updateLedger(options.ledgerPath, plan.ledger);
  }
  return { changed: plan.changed, unchanged: plan.unchanged, operations: plan.operations.length };
}

// What the host refuses (a name too long, permissions, a full disk) becomes a
// catalog error; planning reads every path first, so most refusals come before any write.
async function hostErrors<T>(phase: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (e instanceof AgentError) throw e;
    throw new AgentError(AgentErrorCode.ApplyFailed, `${phase} failed: ${errorMessage(e)}`, { cause: e });
  }
}

/**
 * Carries out planned operations in order, with file writes batched: a write
 * stages its temp file, and the batch is flushed (fsynced together, then
 * renamed in order) before any operation other than a write or a directory
 * creation, so that operation sees the tree the plan assumed, and at the end.
 * Every operation reaches its path from the root without following a link
 * ({@link RootedFs}); directories held open for staged writes are let go at each flush.
 */
export async function executePlan(plan: ApplyPlan, durable: boolean, fs: RootedFs = openRootedFs()): Promise<void> {
  let batch = new AtomicWriteBatch(durable);
  const flush = async (): Promise<void> => {
    await batch.flush();
    fs.release();
    // A directory descriptor's number is reused once closed: start afresh.
    batch = new AtomicWriteBatch(durable);
  };
  try {
    // The root (of each drive) is trusted and made when missing, as a fresh --root directory is.
    for (const base of new Set(plan.operations.map((op) => op.at.base)))
      mkdirSync(base, { recursive: true, mode: 0o755 });
    for (const op of plan.operations) {
      if (op.op === "write") {
        await batch.add(fs.pathOf(op.at), op.data, op.mode);
        if (fs.held >= HELD_DIRECTORIES) await flush();
        continue;
      }
      if (op.op !== "mkdir") await flush();
      execute(op, fs);
    }
    await flush();
  } catch (e) {
    batch.discard();
    throw e;
  } finally {
    fs.release();
  }
}

/** Directories held open for staged writes before the batch is flushed early. */
const HELD_DIRECTORIES = 512;

function execute(op: Exclude<Operation, { op: "write" }>, fs: RootedFs): void {
  switch (op.op) {
    case "mkdir":
      fs.mkdir(op.at, op.mode);
      return;
    case "remove":
      fs.remove(op.at);
      return;
    case "chmod":
      fs.chmod(op.at, op.mode);
      return;
    case "symlink":
      fs.symlink(op.text, op.at);
      return;
    case "hardlink":
      fs.link(op.existing, op.at);
      return;
  }
}
