/**
 * Atomic file replacement: write a temp file beside the target, flush it to disk,
 * set its mode, then rename it over the target, so a reader (or a crash) sees the
 * old file or the new one and never half of either.
 *
 * Ignition applies write thousands of small files, where each trip through
 * libuv's thread pool costs the main thread more than the system call itself:
 * a small file is written with synchronous calls (microseconds each), and only
 * its fsync, which waits on the disk, goes to the pool, where many overlap. A
 * large file is written entirely off the main thread, on a bare descriptor with
 * the callback API (a FileHandle's promise API adds objects to every call).
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  close,
  closeSync,
  fchmod,
  fchmodSync,
  fsync,
  open,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  unlink,
  write,
  writeSync,
} from "node:fs";
import { mkdir } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Options for {@link writeFileAtomic}. */
export interface AtomicWriteOptions {
  /** Permission bits set before the rename (independent of the umask). @default 0o644 */
  readonly mode?: number;
  /** fsync the data before the rename. @default true */
  readonly durable?: boolean;
  /** Create missing parent directories (0755). @default false */
  readonly makeParents?: boolean;
}

// Temp names: unique per process by a counter, across processes by a random prefix.
const tempPrefix = randomBytes(4).toString("hex");
let tempCounter = 0;

/**
 * How long a rename over a file another process holds open is retried on
 * Windows, which refuses it (a scanner or an indexer lets go within moments; a
 * program that keeps the file open does not, and is named in the error).
 */
export const IN_USE_WAIT_MS = 5000;

const IN_USE = new Set(["EPERM", "EACCES", "EBUSY"]);

/**
 * Renames `temp` over `path`; on Windows a target in use is retried for
 * {@link IN_USE_WAIT_MS}, then refused with an error (its code kept) that says so.
 */
async function replaceFile(temp: string, path: string): Promise<void> {
  const deadline = Date.now() + IN_USE_WAIT_MS;
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    try {
      renameSync(temp, path);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? "";
      if (process.platform !== "win32" || !IN_USE.has(code)) throw e;
      // Windows will not replace a read-only file (a mode without the owner's write bit); POSIX renames over it.
      if (clearReadOnly(path)) continue;
      if (Date.now() >= deadline)
        throw Object.assign(
          new Error(
            `${path} is in use by another process (${code}): it was not replaced after ${IN_USE_WAIT_MS / 1000} s`,
          ),
          { code, path },
        );
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** Makes `path` writable if it is a read-only file; whether it was. */
function clearReadOnly(path: string): boolean {
  try {
    const st = statSync(path);
    if (!st.isFile() || (st.mode & 0o200) !== 0) return false;
    chmodSync(path, st.mode | 0o200);
    return true;
  } catch {
    return false;
  }
}

/** Files up to this size are written on the main thread (a page-cache copy of at most this much). */
const SMALL_FILE = 64 * 1024;

type Done = (e: NodeJS.ErrnoException | null) => void;

function writeAll(fd: number, data: Uint8Array, offset: number, done: Done): void {
  if (offset >= data.byteLength) return done(null);
  write(fd, data, offset, data.byteLength - offset, null, (e, n) =>
    e ? done(e) : writeAll(fd, data, offset + n, done),
  );
}

/** A temp file written and not yet renamed into place. */
interface Staged {
  readonly fd: number;
  readonly temp: string;
  readonly path: string;
}

const fsyncFd = (fd: number): Promise<void> =>
  new Promise((resolve, reject) => fsync(fd, (e) => (e ? reject(e) : resolve())));

/** What {@link tempFor} names look like (and, before them, `.<name>.<12 hex>.tmp`). */
const TEMP_NAME = /^\..+\.[0-9a-z]{8,}\.tmp$/;

function tempFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${tempPrefix}${(tempCounter++).toString(36)}.tmp`);
}

/**
 * Many atomic replacements, made durable together: each file is written to
 * its temp file as it is added, and {@link flush} fsyncs every staged file at
 * once, then renames each into place in the order added. On Linux the staged
 * files' fsyncs share journal commits, and no file is created while one is
 * being committed (creating files beside running fsyncs waits on the journal,
 * which made one-at-a-time durable writes of 1,000 small files cost most of an
 * apply). A crash before the flush leaves only temp files; after it, each file
 * is whole, old or new.
 */
export class AtomicWriteBatch {
  private staged: Staged[] = [];
  /** Per directory written into: the temp files found there from a write that never finished. */
  private leftovers = new Map<string, string[]>();

  /** `limit`: how many files may be staged (each holds a descriptor) before they are flushed. */
  constructor(
    private readonly durable: boolean,
    private readonly limit = 256,
  ) {}

  /** Writes `data` to a temp file beside `path`, renamed over it at the next flush. */
  async add(path: string, data: Uint8Array, mode: number): Promise<void> {
    this.removeLeftovers(path);
    const temp = tempFor(path);
    const fd = openSync(temp, "wx", 0o600);
    try {
      if (data.byteLength <= SMALL_FILE) {
        for (let offset = 0; offset < data.byteLength;) offset += writeSync(fd, data, offset);
      } else {
        await new Promise<void>((resolve, reject) => writeAll(fd, data, 0, (e) => (e ? reject(e) : resolve())));
      }
      fchmodSync(fd, mode);
    } catch (e) {
      closeSync(fd);
      rmSync(temp, { force: true });
      throw e;
    }
    this.staged.push({ fd, temp, path });
    if (this.staged.length >= this.limit) await this.flush();
  }

  /** Makes every staged file durable (when asked to) and renames each into place. */
  async flush(): Promise<void> {
    const staged = this.staged;
    this.staged = [];
    let renamed = 0;
    try {
      if (this.durable) await Promise.all(staged.map((s) => fsyncFd(s.fd)));
      for (const s of staged) {
        closeSync(s.fd);
        await replaceFile(s.temp, s.path);
        renamed++;
      }
    } catch (e) {
      for (const s of staged.slice(renamed)) {
        try {
          closeSync(s.fd);
        } catch {
          // closed before its rename failed
        }
        rmSync(s.temp, { force: true });
      }
      throw e;
    }
  }

  /**
   * Removes temp files of `path` left by a writer that was killed between
   * writing and renaming (a batch widens that window to the whole batch): a
   * re-apply writes the file again, and would otherwise leave the old temp
   * beside it. Only names this module makes for `path` are touched.
   */
  private removeLeftovers(path: string): void {
    const dir = dirname(path);
    let found = this.leftovers.get(dir);
    if (found === undefined) {
      try {
        found = readdirSync(dir).filter((name) => TEMP_NAME.test(name));
      } catch {
        found = [];
      }
      this.leftovers.set(dir, found);
    }
    if (found.length === 0) return;
    const prefix = `.${basename(path)}.`;
    for (const name of found) {
      if (name.startsWith(prefix) && /^[0-9a-z]{8,}\.tmp$/.test(name.slice(prefix.length)))
        rmSync(join(dir, name), { force: true });
    }
  }

  /** Removes every staged temp file without renaming it (after a failure elsewhere). */
  discard(): void {
    for (const s of this.staged) {
      closeSync(s.fd);
      rmSync(s.temp, { force: true });
    }
    this.staged = [];
  }
}

/** Replaces `path` with `data` atomically. */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const dir = dirname(path);
  if (options.makeParents) await mkdir(dir, { recursive: true, mode: 0o755 });
  const temp = tempFor(path);
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  const mode = options.mode ?? 0o644;
  const durable = options.durable ?? true;
  if (bytes.byteLength <= SMALL_FILE) return writeSmall(path, temp, bytes, mode, durable);
  await new Promise<void>((resolve, reject) => {
    // Private until its mode is set (the umask applies to open's mode; fchmod sets it exactly).
    open(temp, "wx", 0o600, (openError, fd) => {
      if (openError) return reject(openError);
      const fail = (e: NodeJS.ErrnoException): void => close(fd, () => unlink(temp, () => reject(e)));
      writeAll(fd, bytes, 0, (writeError) => {
        if (writeError) return fail(writeError);
        const chmodAndClose = (): void =>
          fchmod(fd, mode, (chmodError) => {
            if (chmodError) return fail(chmodError);
            close(fd, (closeError) => {
              if (closeError) return unlink(temp, () => reject(closeError));
              replaceFile(temp, path).then(resolve, (renameError: Error) => unlink(temp, () => reject(renameError)));
            });
          });
        if (!durable) return chmodAndClose();
        fsync(fd, (syncError) => (syncError ? fail(syncError) : chmodAndClose()));
      });
    });
  });
}

async function writeSmall(
  path: string,
  temp: string,
  bytes: Uint8Array,
  mode: number,
  durable: boolean,
): Promise<void> {
  const fd = openSync(temp, "wx", 0o600);
  let closed = false;
  try {
    for (let offset = 0; offset < bytes.byteLength;) offset += writeSync(fd, bytes, offset);
    fchmodSync(fd, mode);
    if (durable) await fsyncFd(fd);
    closed = true;
    closeSync(fd);
    await replaceFile(temp, path);
  } catch (e) {
    if (!closed) closeSync(fd);
    rmSync(temp, { force: true });
    throw e;
  }
}
