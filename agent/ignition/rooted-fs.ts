/**
 * Carrying out operations below a root without following links. The planner
 * already resolved every path inside the root; this layer makes sure the host
 * still agrees when each operation runs, so a link that appears in a parent
 * chain between planning and writing (or one the plan did not foresee) stops
 * the apply instead of redirecting a write, a removal or a chmod out of the root.
 *
 * On Linux every parent is opened from the root one name at a time with
 * O_NOFOLLOW|O_DIRECTORY, and the operation then names its target through the
 * opened directory (`/proc/self/fd/N/name`), which the kernel resolves to that
 * very directory: the openat() pattern, as Node has no *at() calls. Elsewhere
 * (Windows, where junctions and symbolic links both read as links, and other
 * POSIX hosts) each parent is checked with lstat just before the operation.
 */
import {
  chmodSync,
  closeSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  constants,
} from "node:fs";
import { join } from "node:path";
import {
  AgentError,
  AgentErrorCode,
  checkBelow,
  fdPath,
  O_PATH_FLAG,
  openBelow,
  WalkError,
  walksByDescriptor,
} from "../common";
import { type HostRef, type PathMapper, refPath } from "./paths";
import { type NodeLookup, resolveInRoot } from "./resolve";

/** Path-based file operations confined to the parents a {@link HostRef} names. */
export interface RootedFs {
  /** A path naming `ref` whose parents were just checked to be real directories; valid until {@link release}. */
  pathOf(ref: HostRef): string;
  mkdir(ref: HostRef, mode: number): void;
  /** Removes `ref` (recursively); a link at `ref` is removed, never followed. */
  remove(ref: HostRef): void;
  /** Changes the mode of the node at `ref`; refuses a link. */
  chmod(ref: HostRef, mode: number): void;
  symlink(text: string, ref: HostRef): void;
  /** Hard-links `ref` to `existing` (a link at `existing` is linked itself, not followed). */
  link(existing: HostRef, ref: HostRef): void;
  /** How many directories are held open. */
  readonly held: number;
  /** Closes every held directory; earlier {@link pathOf} results become invalid. */
  release(): void;
}

function escaped(ref: HostRef, e: unknown): AgentError {
  if (!(e instanceof WalkError)) throw e;
  const why =
    e.code === "ENOTDIR" || e.code === "ELOOP"
      ? "is a link or not a directory"
      : e.code === "ENOENT"
        ? "no longer exists"
        : `cannot be opened (${e.code})`;
  return new AgentError(
    AgentErrorCode.ApplyFailed,
    `${refPath(ref)}: ${e.at} ${why} since planning; nothing is followed out of the root`,
    { cause: e.cause ?? e },
  );
}

// The planner replaces a file that has other names rather than change its mode: one that gained a
// name since (a hard link, maybe from outside the root) is left alone.
function sharedInode(ref: HostRef): AgentError {
  return new AgentError(
    AgentErrorCode.ApplyFailed,
    `${refPath(ref)}: gained another hard link since planning; its mode is left alone, as a change would reach every name of it`,
  );
}

/** The Linux implementation: directories opened from the root with O_NOFOLLOW. */
class ProcFdRoot implements RootedFs {
  private readonly dirs = new Map<string, number>();

  get held(): number {
    return this.dirs.size;
  }

  private dir(ref: HostRef): number {
    const parents = ref.names.slice(0, -1);
    const key = join(ref.base, ...parents);
    const known = this.dirs.get(key);
    if (known !== undefined) return known;
    let fd: number;
    try {
      fd = openBelow(ref.base, parents);
    } catch (e) {
      throw escaped(ref, e);
    }
    this.dirs.set(key, fd);
    return fd;
  }

  pathOf(ref: HostRef): string {
    return fdPath(this.dir(ref), ref.names[ref.names.length - 1] ?? ".");
  }

  mkdir(ref: HostRef, mode: number): void {
    mkdirSync(this.pathOf(ref), mode);
    this.chmod(ref, mode);
  }

  remove(ref: HostRef): void {
    rmSync(this.pathOf(ref), { recursive: true, force: true });
  }

  chmod(ref: HostRef, mode: number): void {
    const fd = openSync(this.pathOf(ref), O_PATH_FLAG | constants.O_NOFOLLOW);
    try {
      const st = fstatSync(fd);
      if (st.isSymbolicLink())
        throw new AgentError(
          AgentErrorCode.ApplyFailed,
          `${refPath(ref)}: became a link since planning; its mode is left alone`,
        );
      if (st.isFile() && st.nlink > 1) throw sharedInode(ref);
      chmodSync(fdPath(fd), mode);
    } finally {
      closeSync(fd);
    }
  }

  symlink(text: string, ref: HostRef): void {
    symlinkSync(text, this.pathOf(ref));
  }

  link(existing: HostRef, ref: HostRef): void {
    linkSync(this.pathOf(existing), this.pathOf(ref));
  }

  release(): void {
    for (const fd of this.dirs.values()) closeSync(fd);
    this.dirs.clear();
  }
}

/** Elsewhere: every parent checked with lstat right before the operation. */
class CheckedRoot implements RootedFs {
  readonly held = 0;

  pathOf(ref: HostRef): string {
    try {
      checkBelow(ref.base, ref.names.slice(0, -1));
    } catch (e) {
      throw escaped(ref, e);
    }
    return refPath(ref);
  }

  mkdir(ref: HostRef, mode: number): void {
    const path = this.pathOf(ref);
    mkdirSync(path, mode);
    chmodSync(path, mode);
  }

  remove(ref: HostRef): void {
    rmSync(this.pathOf(ref), { recursive: true, force: true });
  }

  chmod(ref: HostRef, mode: number): void {
    const path = this.pathOf(ref);
    const st = lstatSync(path);
    if (st.isSymbolicLink())
      throw new AgentError(AgentErrorCode.ApplyFailed, `${path}: became a link since planning; its mode is left alone`);
    if (st.isFile() && st.nlink > 1) throw sharedInode(ref);
    chmodSync(path, mode);
  }

  symlink(text: string, ref: HostRef): void {
    symlinkSync(text, this.pathOf(ref));
  }

  link(existing: HostRef, ref: HostRef): void {
    linkSync(this.pathOf(existing), this.pathOf(ref));
  }

  release(): void {
    // nothing held
  }
}

/** The confined file operations for this host. */
export function openRootedFs(platform: NodeJS.Platform = process.platform): RootedFs {
  return walksByDescriptor(platform) ? new ProcFdRoot() : new CheckedRoot();
}

/**
 * Where a config path stands on the host now, its parents resolved inside the
 * root as an apply resolves them: for code that removes or reads what an apply
 * laid down. Throws an AgentError for a link loop or a link no root can contain.
 */
export function locateInRoot(mapper: PathMapper, configPath: string): HostRef {
  const lookup: NodeLookup = (p) => {
    const host = mapper.hostPath(p);
    try {
      const s = lstatSync(host);
      if (s.isSymbolicLink()) return { type: "symlink", text: readlinkSync(host) };
      return { type: s.isDirectory() ? "dir" : s.isFile() ? "file" : "other" };
    } catch {
      return { type: "absent" };
    }
  };
  return mapper.locate(resolveInRoot(configPath, lookup, (text) => mapper.linkTarget(text)));
}
