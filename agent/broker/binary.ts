/**
 * Preparing a requested binary: its SHA1 must match the client's (as wins), and
 * it is **copied** — never moved, so the caller's file stays — to
 * `rancher-wins-<file name>` beside it, hashing while copying so the file that
 * runs is the file that was checked, then renamed into place atomically.
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { chmod, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import { AgentError, AgentErrorCode, errorMessage } from "../common/errors";

/** The prefix wins gave started binaries, kept so `Get-Process rancher-wins-*` still finds them. */
export const PROCESS_PREFIX = "rancher-wins-";

/** The process name for a binary path: the prefix plus the file name without exactly one `.exe`. */
export function processName(path: string): string {
  const file = basename(path.replace(/\\/g, "/"));
  return PROCESS_PREFIX + (/\.exe$/i.test(file) ? file.slice(0, -4) : file);
}

/** Copies `path` to its `rancher-wins-` twin if its SHA1 is `checksum`; returns the copy's path. */
export async function prepareBinary(path: string, checksum: string): Promise<string> {
  const source = await stat(path).catch((e: unknown) => {
    throw new AgentError(AgentErrorCode.NotFound, `could not find binary ${path}: ${errorMessage(e)}`);
  });
  if (!source.isFile()) throw new AgentError(AgentErrorCode.NotFound, `could not find binary ${path}: not a regular file`);
  const target = join(dirname(path), PROCESS_PREFIX + basename(path));
  const temp = join(dirname(path), `.${basename(target)}.${randomBytes(6).toString("hex")}.tmp`);
  const sha1 = createHash("sha1");
  try {
    await pipeline(
      createReadStream(path),
      new Transform({ transform(chunk: Buffer, _enc, done) { sha1.update(chunk); done(null, chunk); } }),
      createWriteStream(temp, { mode: 0o700 }),
    );
    const actual = sha1.digest("hex");
    if (actual.toLowerCase() !== checksum.toLowerCase()) {
      throw new AgentError(AgentErrorCode.NotFound, `could not find binary ${path}: checksum mismatch (expected ${checksum}, found ${actual})`);
    }
    await chmod(temp, source.mode & 0o7777);
    await rename(temp, target);
    return target;
  } catch (e) {
    await rm(temp, { force: true });
    if (e instanceof AgentError) throw e;
    throw new AgentError(AgentErrorCode.ApplyFailed, `could not copy ${path} to ${target}: ${errorMessage(e)}`);
  }
}
