/**
 * The agent's state directory, `<root>/.winfleet`, inside the same boundary as
 * what Ignition writes: every path the agent writes, reads or removes there —
 * journal, plan files, component records, step logs, the lock and its key, the
 * Ignition ledger, accepted versions, the report queue — is reached from the
 * root through the no-follow walk (`no-follow.ts`), one directory at a time.
 *
 * A directory on the way that is a link (symbolic link or junction) or not a
 * directory, or that belongs to another user, is refused with an error naming
 * it, never followed or used: a root prepared in advance, or a config that
 * laid down `/.winfleet`, cannot send the agent's writes and removals outside
 * the root. Missing directories are made 0700; one of ours that group or others
 * may read or write is made 0700 (it holds step logs and the lock key). On
 * Windows, where modes mean nothing, the state directory's owner and DACL are
 * checked the same way and its DACL made private (`state-acl.win32.ts`), once
 * per process.
 */
import {
  chmodSync,
  closeSync,
  mkdirSync,
  constants,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  rmSync,
  type Stats,
} from "node:fs";
import { join } from "node:path";
import { type AtomicWriteOptions, writeFileAtomic } from "./atomic-file";
import { AgentError, AgentErrorCode } from "./errors";
import { checkBelow, fdPath, openBelow, WalkError, walksByDescriptor } from "./no-follow";
import { secureStateDir } from "./state-acl.win32";

/** The state directory's name below a root. */
export const STATE_DIR_NAME = ".winfleet";

/** A directory reached from a trusted base without following a link, each time it is used. */
export interface ConfinedDir {
  /** Where it is, for messages. */
  readonly path: string;
  /**
   * Runs `fn` with a path that names this directory, reached just now without following a link;
   * the path is valid only while `fn` runs. Missing directories are made (0700) unless `create`
   * is false, when a missing one fails with an error whose code is ENOENT.
   */
  use<T>(fn: (dir: string) => Promise<T>, create?: boolean): Promise<T>;
  /** {@link use}, for synchronous work. */
  useSync<T>(fn: (dir: string) => T, create?: boolean): T;
  /** A directory below this one. */
  sub(...names: string[]): ConfinedDir;
}

/** How the state directory is checked: passed in so the checks can be shown to refuse. */
export interface StateDirOptions {
  /** The agent's user (POSIX uid); directories owned by another are refused. @default process.getuid() */
  readonly uid?: number;
  readonly platform?: NodeJS.Platform;
  /**
   * Windows: checks the state directory's owner and DACL, making the DACL private when it was just made or is not;
   * throws to refuse. @default state-acl.win32.ts's, on Windows
   */
  readonly secure?: (dir: string, created: boolean) => void;
}

function refuse(at: string, why: string): AgentError {
  return new AgentError(
    AgentErrorCode.PermissionDenied,
    `${at} ${why}: the agent keeps its state only in a real directory of its own below the root, and follows no link there. Remove it (the agent makes it afresh), or choose another root`,
  );
}

function walkRefusal(e: unknown): unknown {
  if (!(e instanceof WalkError)) return e;
  if (e.code === "ELOOP") return refuse(e.at, "is a symbolic link or junction");
  if (e.code === "ENOTDIR") return refuse(e.at, "is not a directory");
  if (e.code === "ENOENT") return Object.assign(new Error(`${e.at} does not exist`), { code: "ENOENT" });
  return new AgentError(AgentErrorCode.ApplyFailed, `cannot open ${e.at} (${e.code})`, { cause: e.cause });
}

/** Whether a Stats for a directory leaves group or others any access. */
const loose = (st: Stats): boolean => (st.mode & 0o077) !== 0;

const secured = new Set<string>();

class PrivateDir implements ConfinedDir {
  readonly path: string;

  constructor(
    private readonly base: string,
    private readonly names: readonly string[],
    private readonly options: StateDirOptions,
  ) {
    this.path = join(base, ...names);
  }

  sub(...names: string[]): ConfinedDir {
    for (const n of names)
      if (n === "" || n === "." || n === ".." || /[\\/]/.test(n)) throw new Error(`not a directory name: ${n}`);
    return new PrivateDir(this.base, [...this.names, ...names], this.options);
  }

  private check(at: string, st: Stats, fd: number, created: boolean): void {
    const uid = this.options.uid ?? process.getuid?.();
    const platform = this.options.platform ?? process.platform;
    if (platform !== "win32" && uid !== undefined && st.uid !== uid)
      throw refuse(at, `is owned by uid ${st.uid}, not by the agent's user (uid ${uid})`);
    // Ours, so ours to make private (one made by an earlier version with 0755, or by hand).
    if (platform !== "win32" && loose(st)) chmodSync(fd >= 0 ? fdPath(fd) : at, 0o700);
    const secure = this.options.secure ?? (platform === "win32" ? secureStateDir : undefined);
    if (at === join(this.base, STATE_DIR_NAME) && secure && !secured.has(at)) {
      secure(at, created);
      secured.add(at);
    }
  }

  // The root is trusted, and made when missing, as a fresh --root directory is.
  private makeBase(create: boolean): void {
    if (create) mkdirSync(this.base, { recursive: true, mode: 0o755 });
  }

  private walkOptions(create: boolean) {
    return {
      ...(create ? { create: 0o700 } : {}),
      check: (at: string, st: Stats, fd: number, created: boolean) => this.check(at, st, fd, created),
    };
  }

  useSync<T>(fn: (dir: string) => T, create = true): T {
    this.makeBase(create);
    if (!walksByDescriptor(this.options.platform)) {
      let dir: string;
      try {
        dir = checkBelow(this.base, this.names, this.walkOptions(create));
      } catch (e) {
        throw walkRefusal(e);
      }
      return fn(dir);
    }
    let fd: number;
    try {
      fd = openBelow(this.base, this.names, this.walkOptions(create));
    } catch (e) {
      throw walkRefusal(e);
    }
    try {
      return fn(fdPath(fd));
    } finally {
      closeSync(fd);
    }
  }

  async use<T>(fn: (dir: string) => Promise<T>, create = true): Promise<T> {
    if (!walksByDescriptor(this.options.platform)) return this.useSync((dir) => fn(dir), create);
    this.makeBase(create);
    let fd: number;
    try {
      fd = openBelow(this.base, this.names, this.walkOptions(create));
    } catch (e) {
      throw walkRefusal(e);
    }
    try {
      return await fn(fdPath(fd));
    } finally {
      closeSync(fd);
    }
  }
}

/** The agent's state directory below `root` (nothing is checked or made until it is used). */
export function agentStateDir(root: string, options: StateDirOptions = {}): ConfinedDir {
  return new PrivateDir(root, [STATE_DIR_NAME], options);
}

/** A directory reached through the same walk from `base` (a trusted directory), below its `names`. */
export function confinedDir(base: string, names: readonly string[], options: StateDirOptions = {}): ConfinedDir {
  return new PrivateDir(base, names, options);
}

const isMissing = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === "ENOENT";

/** Reads `name` in `dir` without following a link; undefined when it (or the directory) is absent. */
export async function readFileIn(dir: ConfinedDir, name: string): Promise<Buffer | undefined> {
  await Promise.resolve();
  return readFileInSync(dir, name);
}

/** {@link readFileIn}, synchronously. */
export function readFileInSync(dir: ConfinedDir, name: string): Buffer | undefined {
  try {
    return dir.useSync((d) => {
      const fd = openSync(join(d, name), constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
      try {
        return readFileSync(fd);
      } finally {
        closeSync(fd);
      }
    }, false);
  } catch (e) {
    if (isMissing(e)) return undefined;
    if ((e as NodeJS.ErrnoException).code === "ELOOP") throw refuse(join(dir.path, name), "is a symbolic link");
    throw e;
  }
}

/** The names in `dir`; none when it is absent. */
export function readdirIn(dir: ConfinedDir): string[] {
  try {
    return dir.useSync((d) => readdirSync(d), false);
  } catch (e) {
    if (isMissing(e)) return [];
    throw e;
  }
}

/**
 * Removes `name` in `dir`, recursively: a link there is removed, never followed. (What lies inside
 * a removed directory is walked by path: the directory is private to the agent's user.)
 */
export function removeIn(dir: ConfinedDir, name: string): void {
  try {
    dir.useSync((d) => rmSync(join(d, name), { recursive: true, force: true }), false);
  } catch (e) {
    if (!isMissing(e)) throw e;
  }
}

/** The real path of `dir` (its canonical name, however the root was spelled). */
export function realPathOf(dir: ConfinedDir): string {
  return dir.useSync((d) => (d.startsWith("/proc/self/fd/") ? readlinkSync(d) : realpathSync.native(d)));
}

/** Replaces `name` in `dir` atomically (temp file beside it, fsync, rename: a link there is replaced, not followed). */
export async function writeFileIn(
  dir: ConfinedDir,
  name: string,
  data: string | Uint8Array,
  options: Omit<AtomicWriteOptions, "makeParents"> = {},
): Promise<void> {
  await dir.use((d) => writeFileAtomic(join(d, name), data, { mode: 0o600, ...options }));
}
