/**
 * Only the broker's user may write to the directory a broker socket lives in:
 * whoever can write to it can replace the socket with their own and read the
 * requests clients send (paths, arguments, environment), or take the broker's
 * place. A missing directory is created 0700; an existing one must be a real
 * directory (not a symbolic link) owned by us. One that group or others may
 * write to loses those write bits — after which nobody else can add or replace
 * an entry, and the socket path is removed and bound afresh — unless it is a
 * shared directory (sticky and writable by others, as /tmp): that is refused,
 * never changed. Read and search access for others is left alone (the sockets
 * themselves are 0600), so naming a socket in a system directory such as /run
 * changes nothing there.
 */
import { chmod, lstat, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { AgentError, AgentErrorCode, errorMessage } from "../common";

/** What was done to make the directory private. */
export type PrivateDirOutcome = "created" | "ok" | "repaired";

/** The file operations used, passed in so the checks can be shown to fail. */
export interface PrivateDirFs {
  lstat: typeof lstat;
  mkdir: typeof mkdir;
  chmod: typeof chmod;
}

const realFs: PrivateDirFs = { lstat, mkdir, chmod };

function refuse(dir: string, why: string): never {
  throw new AgentError(
    AgentErrorCode.PermissionDenied,
    `socket directory ${dir} ${why}; the broker will not listen where another user could replace its socket`,
  );
}

/**
 * Makes `dir` a private directory of the user `uid`, or refuses (PERMISSION_DENIED)
 * when it is a symbolic link, not a directory, or owned by someone else.
 */
export async function ensurePrivateDir(
  dir: string,
  uid: number,
  fs: PrivateDirFs = realFs,
): Promise<PrivateDirOutcome> {
  await fs.mkdir(dirname(dir), { recursive: true, mode: 0o755 }).catch(() => undefined); // a failure shows below
  let created = false;
  try {
    await fs.mkdir(dir, { mode: 0o700 });
    created = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") {
      throw new AgentError(AgentErrorCode.ApplyFailed, `cannot create socket directory ${dir}: ${errorMessage(e)}`);
    }
  }
  const st = await fs.lstat(dir);
  if (st.isSymbolicLink()) refuse(dir, "is a symbolic link");
  if (!st.isDirectory()) refuse(dir, "is not a directory");
  if (st.uid !== uid) refuse(dir, `is owned by uid ${st.uid}, not by the broker's user (uid ${uid})`);
  if ((st.mode & 0o022) === 0) return created ? "created" : "ok";
  if ((st.mode & 0o1000) !== 0) refuse(dir, "is a shared directory (sticky and writable by others)");
  // Ours, so ours to fix (a directory made under a permissive umask, or by hand).
  await fs.chmod(dir, st.mode & 0o755);
  return created ? "created" : "repaired";
}

/**
 * Runs `bind` with a umask that gives any file it creates no access for group
 * or others, so a socket is never reachable by them, not even between its
 * creation and the chmod that follows.
 */
export async function withPrivateUmask<T>(bind: () => Promise<T>): Promise<T> {
  let previous: number | undefined;
  try {
    previous = process.umask(0o077);
  } catch {
    // A worker thread cannot set the umask: the private directory still keeps the socket from others.
  }
  try {
    return await bind();
  } finally {
    if (previous !== undefined) process.umask(previous);
  }
}
