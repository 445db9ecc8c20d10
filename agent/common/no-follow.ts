/**
 * Reaching a directory below a trusted base without following a link: the
 * walk Ignition's writes and the agent's own state both go through. On Linux
 * each directory is opened from the one before it with O_NOFOLLOW|O_DIRECTORY,
 * and an operation then names its target through the open directory
 * (`/proc/self/fd/N/name`), which the kernel resolves to that very directory:
 * the openat() pattern, as Node has no *at() calls. Elsewhere (Windows, where
 * junctions and symbolic links both read as links, and other POSIX hosts) each
 * directory is checked with lstat just before the operation.
 */
import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, type Stats } from "node:fs";
import { join } from "node:path";

/**
 * O_PATH: opens a directory without needing read permission on it (its value is the generic one on
 * these architectures), else O_RDONLY.
 */
export const O_PATH_FLAG =
  process.platform === "linux" &&
  ["x64", "arm64", "arm", "ia32", "riscv64", "ppc64", "s390x", "loong64"].includes(process.arch)
    ? 0o10000000
    : constants.O_RDONLY;

/** Whether this host walks by descriptor (`/proc/self/fd`), else by lstat. */
export function walksByDescriptor(platform: NodeJS.Platform = process.platform): boolean {
  return platform === "linux" && existsSync("/proc/self/fd");
}

/** The path that names `name` in the directory open as `fd` (the directory itself without a name). */
export function fdPath(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** A step of the walk failed: `at` is the path reached, `cause` the system's error. */
export class WalkError extends Error {
  override readonly name = "WalkError";
  constructor(
    readonly at: string,
    readonly code: string,
    override readonly cause: unknown,
  ) {
    super(`${at}: ${code}`);
  }
}

/** What {@link openBelow} does at each directory it opens. */
export interface WalkOptions {
  /** Create a missing directory with this mode (else a missing one fails the walk with ENOENT). */
  readonly create?: number;
  /** Checks each opened directory (its path, its fstat, whether the walk created it); throws to refuse it. */
  readonly check?: (at: string, st: Stats, fd: number, created: boolean) => void;
}

/**
 * Opens `base` (trusted: it is followed if a link), then each of `names` below it without following
 * a link, and returns the last directory's descriptor (Linux; the caller closes it). A link, or a
 * non-directory, where a directory is expected fails with a {@link WalkError} (ELOOP or ENOTDIR).
 */
export function openBelow(base: string, names: readonly string[], options: WalkOptions = {}): number {
  let fd: number;
  try {
    fd = openSync(base, O_PATH_FLAG | constants.O_DIRECTORY);
  } catch (e) {
    throw new WalkError(base, (e as NodeJS.ErrnoException).code ?? "EIO", e);
  }
  let at = base;
  try {
    for (const name of names) {
      at = join(at, name);
      let created = false;
      let next: number;
      try {
        next = openSync(fdPath(fd, name), O_PATH_FLAG | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      } catch (e) {
        let code = (e as NodeJS.ErrnoException).code ?? "EIO";
        // O_PATH|O_NOFOLLOW meets a link as a non-directory: say which it is.
        if (code === "ENOTDIR" && isLink(fdPath(fd, name))) code = "ELOOP";
        if (code !== "ENOENT" || options.create === undefined) throw new WalkError(at, code, e);
        try {
          mkdirSync(fdPath(fd, name), options.create);
          created = true;
        } catch (m) {
          if ((m as NodeJS.ErrnoException).code !== "EEXIST") throw new WalkError(at, "ENOENT", m);
        }
        try {
          next = openSync(fdPath(fd, name), O_PATH_FLAG | constants.O_DIRECTORY | constants.O_NOFOLLOW);
        } catch (again) {
          throw new WalkError(at, (again as NodeJS.ErrnoException).code ?? "EIO", again);
        }
      }
      closeSync(fd);
      fd = next;
      options.check?.(at, fstatSync(fd), fd, created);
    }
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  return fd;
}

/**
 * The lstat walk for hosts without `/proc/self/fd`: each of `names` below `base` must be a real
 * directory just before the operation (made when missing with `options.create`); returns the path.
 */
export function checkBelow(base: string, names: readonly string[], options: WalkOptions = {}): string {
  let at = base;
  for (const name of names) {
    at = join(at, name);
    let st: Stats;
    let created = false;
    try {
      st = lstatSync(at);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? "EIO";
      if (code !== "ENOENT" || options.create === undefined) throw new WalkError(at, code, e);
      try {
        mkdirSync(at, options.create);
        created = true;
      } catch (m) {
        if ((m as NodeJS.ErrnoException).code !== "EEXIST") throw new WalkError(at, "ENOENT", m);
      }
      st = lstatSync(at);
    }
    if (st.isSymbolicLink()) throw new WalkError(at, "ELOOP", undefined);
    if (!st.isDirectory()) throw new WalkError(at, "ENOTDIR", undefined);
    options.check?.(at, st, -1, created);
  }
  return at;
}
