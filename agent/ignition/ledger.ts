/**
 * What the engine last wrote, per file: the fingerprint of the entry that wrote
 * it and the digest and mode of the result. Ignition runs once and never needs
 * this; an agent re-applies, so the ledger is what makes a re-apply of an
 * append or a no-overwrite file a no-op instead of an error, and what drift
 * verification compares the host against.
 *
 * On disk it is a log (`ledger-log.ts`): a header line, then one line
 * per apply with the records it changed, appended and fsynced. An agent
 * applies component after component, and rewriting every record after each
 * one made the bytes written grow with the square of the files. A ledger in
 * the earlier format (one JSON document) is still read, and replaced by a log
 * at its first update.
 */
import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { type LedgerRecord, type LogState, appendBatch, loadLedger, recordBytes, rewriteLedger } from "./ledger-log";

export type { LedgerRecord } from "./ledger-log";

/** The ledger's contents. */
export interface Ledger {
  readonly version: 1;
  readonly files: Record<string, LedgerRecord>;
}

/**
 * Where a ledger is: its path (what messages name, and what a read is remembered by), and how it is
 * reached. A plain path (`ignition apply --ledger FILE`) is used as it is; the agent's own ledger is
 * reached through its state directory's no-follow walk.
 */
export interface LedgerFile {
  readonly path: string;
  /** Runs `fn` with a path to open the ledger by, valid while `fn` runs. */
  use<T>(fn: (path: string) => Promise<T>): Promise<T>;
}

/** A ledger named by a plain path (the operator's choice, used as given). */
function plainLedger(path: string): LedgerFile & { readonly plain: true } {
  const file = resolve(path);
  return { path: file, use: (fn) => fn(file), plain: true };
}

function locate(at: string | LedgerFile): LedgerFile & { readonly plain?: true } {
  return typeof at === "string" ? plainLedger(at) : at;
}

/** An empty ledger. */
export function emptyLedger(): Ledger {
  return { version: 1, files: {} };
}

/** Reads a ledger; a missing file is an empty ledger, a corrupt one is an error naming the file and line. */
export async function readLedger(at: string | LedgerFile): Promise<Ledger> {
  const ledger = locate(at);
  const state = await ledger.use((path) => loadLedger(ledger.path, path));
  return { version: 1, files: state ? Object.fromEntries(state.files) : {} };
}

/**
 * Records `set` and forgets `removed`, durably (fsynced before it returns),
 * writing only the records that differ from what the ledger holds: nothing at
 * all when none do. A crash part-way leaves the ledger as it was before the call.
 */
export async function updateLedger(
  at: string | LedgerFile,
  set: Readonly<Record<string, LedgerRecord>>,
  removed: readonly string[] = [],
): Promise<void> {
  const ledger = locate(at);
  await ledger.use((path) => update(ledger.path, path, ledger.plain === true, set, removed));
}

async function update(
  file: string,
  path: string,
  plain: boolean,
  set: Readonly<Record<string, LedgerRecord>>,
  removed: readonly string[],
): Promise<void> {
  // A second pass only when another writer changed the file between the read and the append.
  for (let pass = 0; ; pass++) {
    const state = await loadLedger(file, path);
    const changed: Record<string, LedgerRecord> = {};
    let any = false;
    for (const [p, r] of Object.entries(set)) {
      const current = state?.files.get(p);
      if (current && sameRecord(current, r)) continue;
      changed[p] = r;
      any = true;
    }
    const gone = removed.filter((p) => state?.files.has(p) === true && !Object.hasOwn(changed, p));
    if (!any && gone.length === 0) return;
    if (state && state.format === "log" && !outgrown(state, changed, gone) && pass < 2) {
      if (await appendBatch(file, state, changed, gone, path)) return;
      continue;
    }
    const files = new Map(state?.files ?? []);
    for (const p of gone) files.delete(p);
    for (const [p, r] of Object.entries(changed)) files.set(p, r);
    await rewriteLedger(file, files, path, plain);
    return;
  }
}

/** Replaces the whole ledger atomically (compacted: one line of records). */
export async function writeLedger(at: string | LedgerFile, ledger: Ledger): Promise<void> {
  const where = locate(at);
  await where.use((path) =>
    rewriteLedger(where.path, new Map(Object.entries(ledger.files)), path, where.plain === true),
  );
}

function sameRecord(a: LedgerRecord, b: LedgerRecord): boolean {
  return a.fingerprint === b.fingerprint && a.sha512 === b.sha512 && a.mode === b.mode && a.host === b.host;
}

/** Logs this small are never compacted. */
const COMPACT_FLOOR = 64 * 1024;

/** The log would be more than twice the size of what it holds: write it afresh instead. */
function outgrown(state: LogState, changed: Record<string, LedgerRecord>, gone: readonly string[]): boolean {
  let live = state.live;
  let appended = 20;
  for (const [p, r] of Object.entries(changed)) {
    const bytes = recordBytes(p, r);
    live += bytes - bytesOf(state, p);
    appended += bytes;
  }
  for (const p of gone) {
    live -= bytesOf(state, p);
    appended += p.length + 3;
  }
  const size = state.size + appended;
  return size >= COMPACT_FLOOR && size > 2 * live;
}

function bytesOf(state: LogState, path: string): number {
  const r = state.files.get(path);
  return r ? recordBytes(path, r) : 0;
}

/** SHA-512 hex of bytes. */
export function sha512(data: Uint8Array): string {
  return createHash("sha512").update(data).digest("hex");
}
