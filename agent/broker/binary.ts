/**
 * Preparing a requested binary: its SHA1 must match the client's (as wins), and
 * it is **copied** — never moved, so the caller's file stays — to
 * `rancher-wins-<file name>` beside it, then renamed into place atomically.
 * The file is opened once, without following a symbolic link, and checked to
 * sit at the very path the whitelist approved; it is hashed and copied from that
 * one handle, so a link or another file swapped in after the whitelist check
 * is refused rather than run.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, chmod, lstat, open, readlink, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import { AgentError, AgentErrorCode, errorMessage } from "../common";

/** The prefix wins gave started binaries, kept so `Get-Process rancher-wins-*` still finds them. */
export const PROCESS_PREFIX = "rancher-wins-";

/** The process name for a binary path: the prefix plus the file name without exactly one `.exe`. */
export function processName(path: string): string {
  const file = basename(path.replace(/\\/g, "/"));
  return PROCESS_PREFIX + (/\.exe$/i.test(file) ? file.slice(0, -4) : file);
}

/** Opens `path` for reading without following a link in its last component (the OS refuses: ELOOP). */
async function openNoFollow(path: string): Promise<FileHandle> {
  const noFollow = process.platform === "win32" ? 0 : constants.O_NOFOLLOW;
  try {
    return await open(path, constants.O_RDONLY | noFollow);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "EMLINK")
      throw new AgentError(AgentErrorCode.InvalidInput, `invalid path ${JSON.stringify(path)}: it is a symbolic link`);
    throw new AgentError(AgentErrorCode.NotFound, `could not find binary ${path}: ${errorMessage(e)}`);
  }
}

/**
 * Fails unless the open `handle` is the file at `path` reached through no link:
 * on Linux the kernel's name for the open file must be `path` itself (a
 * directory swapped for a link would show the link's target); elsewhere the
 * file at `path` must still be the one open.
 */
async function assertOpenedAt(handle: FileHandle, path: string): Promise<void> {
  const st = await handle.stat();
  if (!st.isFile()) throw new AgentError(AgentErrorCode.NotFound, `could not find binary ${path}: not a regular file`);
  if (process.platform === "linux") {
    const actual = await readlink(`/proc/self/fd/${handle.fd}`);
    if (actual !== path)
      throw new AgentError(
        AgentErrorCode.InvalidInput,
        `invalid path ${JSON.stringify(path)}: it resolves to ${actual} through a symbolic link`,
      );
    return;
  }
  const now = await lstat(path).catch(() => undefined);
  if (!now || now.isSymbolicLink() || now.ino !== st.ino || now.dev !== st.dev) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `invalid path ${JSON.stringify(path)}: it changed while it was being checked`,
    );
  }
}

/** How long a copy waits for the file it replaces to be let go (Windows). */
export const REPLACE_WAIT_MS = 5000;

/**
 * Renames `temp` over `target`. Windows refuses to replace a file a program
 * was started from while that program runs, and lets go of it only shortly
 * after the process was ended: there the rename is retried for
 * {@link REPLACE_WAIT_MS}, and a file still in use is named as such.
 */
async function replace(temp: string, target: string): Promise<void> {
  const deadline = Date.now() + REPLACE_WAIT_MS;
  for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
    try {
      await rename(temp, target);
      return;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? "";
      if (process.platform !== "win32" || !["EPERM", "EACCES", "EBUSY"].includes(code)) throw e;
      if (Date.now() >= deadline)
        throw new AgentError(
          AgentErrorCode.ApplyFailed,
          `${target} is in use (${code}): a process still runs it (see prc ls; prc kill --orphans ends what an earlier broker left)`,
        );
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** Copies `path` to its `rancher-wins-` twin if its SHA1 is `checksum`; returns the copy's path. */
export async function prepareBinary(path: string, checksum: string): Promise<string> {
  const source = await openNoFollow(path);
  const target = join(dirname(path), PROCESS_PREFIX + basename(path));
  const temp = join(dirname(path), `.${basename(target)}.${randomBytes(6).toString("hex")}.tmp`);
  let created = false;
  try {
    await assertOpenedAt(source, path);
    const mode = (await source.stat()).mode & 0o7777;
    const sha1 = createHash("sha1");
    // Created afresh (never an existing file or a link planted at the name), and written through its own handle.
    const out = await open(
      temp,
      constants.O_WRONLY |
        constants.O_CREAT |
        constants.O_EXCL |
        (process.platform === "win32" ? 0 : constants.O_NOFOLLOW),
      0o700,
    );
    created = true;
    await pipeline(
      source.createReadStream({ start: 0, autoClose: false }),
      new Transform({
        transform(chunk: Buffer, _enc, done) {
          sha1.update(chunk);
          done(null, chunk);
        },
      }),
      out.createWriteStream(),
    );
    const actual = sha1.digest("hex");
    if (actual.toLowerCase() !== checksum.toLowerCase()) {
      throw new AgentError(
        AgentErrorCode.NotFound,
        `could not find binary ${path}: checksum mismatch (expected ${checksum}, found ${actual})`,
      );
    }
    await chmod(temp, mode);
    await replace(temp, target);
    created = false;
    return target;
  } catch (e) {
    if (created) await rm(temp, { force: true });
    if (e instanceof AgentError) throw e;
    throw new AgentError(AgentErrorCode.ApplyFailed, `could not copy ${path} to ${target}: ${errorMessage(e)}`);
  } finally {
    await source.close();
  }
}
