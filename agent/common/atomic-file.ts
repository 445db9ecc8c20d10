/**
 * Atomic file replacement: write a temp file beside the target, flush it to disk,
 * set its mode, then rename it over the target, so a reader (or a crash) sees the
 * old file or the new one and never half of either.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, rename, rm } from "node:fs/promises";
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

/** Replaces `path` with `data` atomically. */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  const dir = dirname(path);
  if (options.makeParents) await mkdir(dir, { recursive: true, mode: 0o755 });
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(temp, "wx", 0o600);
  try {
    await handle.writeFile(data);
    if (options.durable ?? true) await handle.sync();
  } catch (e) {
    await handle.close();
    await rm(temp, { force: true });
    throw e;
  }
  await handle.close();
  try {
    await chmod(temp, options.mode ?? 0o644);
    await rename(temp, path);
  } catch (e) {
    await rm(temp, { force: true });
    throw e;
  }
}
