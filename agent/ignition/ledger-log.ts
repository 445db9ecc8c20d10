/**
 * The ledger's file. `{"winfleet-ignition-ledger":2}` on its first line, then
 * one line per update: `{"set":{"<path>":<record>},"del":["<path>"]}`, later
 * lines winning. An update is appended with one write and fsynced: a crash
 * leaves it whole or as a last line without its newline (or, if the disk kept
 * the length and not the bytes, one that does not parse), and such a last line
 * is ignored when read and cut off before the next append. Any other line that
 * does not parse makes the ledger corrupt. A file that does not start with the
 * header is the earlier format, one JSON document `{"version":1,"files":{}}`.
 *
 * What was read is kept per file with its identity (device, inode), size and
 * modification time: an agent updates the ledger after each component, so a
 * read that finds the file as it left it costs a stat, and one that finds it
 * appended to reads only the new lines.
 */
import { type FileHandle, open } from "node:fs/promises";
import { constants, type Stats } from "node:fs";
import { z } from "zod";
import { AgentError, AgentErrorCode, errorMessage, writeFileAtomic } from "../common";

const recordSchema = z.object({
  fingerprint: z.string(),
  sha512: z.string(),
  mode: z.number().int(),
  host: z.string(),
});

/** One path's record. */
export type LedgerRecord = z.infer<typeof recordSchema>;

const documentSchema = z.object({ version: z.literal(1), files: z.record(z.string(), recordSchema) });
const batchSchema = z.strictObject({
  set: z.record(z.string(), recordSchema).optional(),
  del: z.array(z.string()).optional(),
});

/** The first line of a ledger in the log format. */
export const LOG_HEADER = '{"winfleet-ignition-ledger":2}\n';
const HEADER_BYTES = Buffer.from(LOG_HEADER);

/** A ledger file as last read or written by this process. */
export interface LogState {
  /** `document`: the earlier format, rewritten as a log at its first update. */
  readonly format: "log" | "document";
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  /** Bytes up to the end of the last whole line; anything after is a torn append. */
  valid: number;
  /** Lines read (for error messages). */
  lines: number;
  readonly files: Map<string, LedgerRecord>;
  /** About what the records would take compacted ({@link recordBytes}). */
  live: number;
}

const states = new Map<string, LogState>();

/** About what a record takes in a compacted log (the exact figure is not needed to bound the log's growth). */
export function recordBytes(path: string, r: LedgerRecord): number {
  return path.length + r.fingerprint.length + r.sha512.length + r.host.length + 60;
}

// The last name is never followed: a link planted where the ledger belongs is refused, not read through.
const READ = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0);
const UPDATE = constants.O_RDWR | (constants.O_NOFOLLOW ?? 0);

/**
 * The ledger `file` (an absolute path, what it is remembered by and messages name), opened at `at`
 * (the same file, reached as its owner reaches it), or undefined when there is none.
 */
export async function loadLedger(file: string, at: string = file): Promise<LogState | undefined> {
  let fh: FileHandle;
  try {
    fh = await open(at, READ);
  } catch (e) {
    states.delete(file);
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new AgentError(AgentErrorCode.FetchFailed, `cannot read the ledger ${file}: ${errorMessage(e)}`);
  }
  try {
    const st = await fh.stat();
    const known = states.get(file);
    if (known && known.dev === st.dev && known.ino === st.ino) {
      if (known.size === st.size && known.mtimeMs === st.mtimeMs) return known;
      if (known.format === "log" && known.valid === known.size && st.size > known.size) {
        const tail = Buffer.alloc(st.size - known.size);
        const { bytesRead } = await fh.read(tail, 0, tail.length, known.size);
        try {
          readLines(file, tail.subarray(0, bytesRead), 0, known.size, known);
        } catch (e) {
          states.delete(file);
          throw e;
        }
        known.size += bytesRead;
        known.mtimeMs = st.mtimeMs;
        return known;
      }
    }
    states.delete(file);
    const state = parseWhole(file, await fh.readFile(), st);
    states.set(file, state);
    return state;
  } finally {
    await fh.close();
  }
}

function parseWhole(file: string, data: Buffer, st: Stats): LogState {
  const base = { dev: st.dev, ino: st.ino, size: data.length, mtimeMs: st.mtimeMs, files: new Map(), live: 0 };
  if (data.subarray(0, HEADER_BYTES.length).equals(HEADER_BYTES)) {
    const state: LogState = { ...base, format: "log", valid: HEADER_BYTES.length, lines: 1 };
    readLines(file, data, HEADER_BYTES.length, 0, state);
    return state;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(data.toString("utf8"));
  } catch (e) {
    throw corrupt(file, `not valid JSON (${errorMessage(e)})`);
  }
  const parsed = documentSchema.safeParse(doc);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw corrupt(file, `${first?.path.join(".") || "(root)"}: ${first?.message ?? "unexpected shape"}`);
  }
  const state: LogState = { ...base, format: "document", valid: data.length, lines: 1 };
  for (const [p, r] of Object.entries(parsed.data.files)) put(state, p, r);
  return state;
}

/** Applies the whole lines of `data` from `start`; `offset` is where `data` starts in the file. */
function readLines(file: string, data: Buffer, start: number, offset: number, state: LogState): void {
  let pos = start;
  for (let nl = data.indexOf(10, pos); nl >= 0; nl = data.indexOf(10, pos)) {
    const line = state.lines + 1;
    let batch: z.infer<typeof batchSchema>;
    try {
      batch = batchSchema.parse(JSON.parse(data.toString("utf8", pos, nl)));
    } catch (e) {
      if (nl + 1 === data.length) break; // the last append, torn
      throw corrupt(
        file,
        `line ${line}: ${e instanceof z.ZodError ? (e.issues[0]?.message ?? "unexpected shape") : errorMessage(e)}`,
      );
    }
    for (const p of batch.del ?? []) drop(state, p);
    for (const [p, r] of Object.entries(batch.set ?? {})) put(state, p, r);
    state.lines = line;
    pos = nl + 1;
    state.valid = offset + pos;
  }
}

function put(state: LogState, path: string, r: LedgerRecord): void {
  drop(state, path);
  state.files.set(path, r);
  state.live += recordBytes(path, r);
}

function drop(state: LogState, path: string): void {
  const old = state.files.get(path);
  if (!old) return;
  state.files.delete(path);
  state.live -= recordBytes(path, old);
}

function corrupt(file: string, why: string): AgentError {
  return new AgentError(
    AgentErrorCode.InvalidInput,
    `the ledger ${file} is corrupt: ${why}. Move it aside: the next apply writes every file again and records it afresh.`,
  );
}

/**
 * Appends one update to the log `state` was read from, fsynced; a torn append
 * after the last whole line is cut off first. Returns false, writing nothing,
 * when the file is no longer the one read (another writer got there first).
 */
export async function appendBatch(
  file: string,
  state: LogState,
  set: Readonly<Record<string, LedgerRecord>>,
  del: readonly string[],
  at: string = file,
): Promise<boolean> {
  const line = Buffer.from(
    `${JSON.stringify({ ...(Object.keys(set).length > 0 ? { set } : {}), ...(del.length > 0 ? { del } : {}) })}\n`,
  );
  const fh = await open(at, UPDATE);
  try {
    const st = await fh.stat();
    // A ledger with another name (a hard link) is never written in place: the rewrite replaces it.
    if (
      st.nlink !== 1 ||
      st.dev !== state.dev ||
      st.ino !== state.ino ||
      st.size !== state.size ||
      st.mtimeMs !== state.mtimeMs
    ) {
      states.delete(file);
      return false;
    }
    try {
      if (state.valid < state.size) await fh.truncate(state.valid);
      for (let at = 0; at < line.length;)
        at += (await fh.write(line, at, line.length - at, state.valid + at)).bytesWritten;
      await fh.sync();
    } catch (e) {
      states.delete(file); // what is on disk is no longer known
      throw e;
    }
    const after = await fh.stat();
    for (const p of del) drop(state, p);
    for (const [p, r] of Object.entries(set)) put(state, p, r);
    state.size = after.size;
    state.valid = state.valid + line.length;
    state.mtimeMs = after.mtimeMs;
    state.lines += 1;
    return true;
  } finally {
    await fh.close();
  }
}

/**
 * Replaces the ledger atomically (temp, fsync, rename) with a compacted log of `files`, at `at`;
 * `makeParents` for a ledger at a plain path (the agent's state directory is made by its walk).
 */
export async function rewriteLedger(
  file: string,
  files: ReadonlyMap<string, LedgerRecord>,
  at: string = file,
  makeParents = true,
): Promise<void> {
  states.delete(file);
  const text = files.size > 0 ? `${LOG_HEADER}${JSON.stringify({ set: Object.fromEntries(files) })}\n` : LOG_HEADER;
  await writeFileAtomic(at, text, { mode: 0o600, makeParents });
}
