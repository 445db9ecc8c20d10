/**
 * Where a config path lands on the host. Ignition paths are POSIX-absolute; on
 * Windows `/` is the system drive and drive paths (`D:/x`) name other volumes.
 * The mapping sits behind {@link PathMapper} so the engine never branches on the OS.
 */
import { lstatSync } from "node:fs";
import { join } from "node:path";
import { STATE_DIR_NAME } from "../common";
import { splitConfigPath } from "./resolve";
import { windowsLinkTarget, windowsNameProblem } from "./paths.win32";

/**
 * How a link's text, read from the host, continues a walk: from the root (an
 * absolute config path, `/a` or `D:/a`), from the link's directory (a relative
 * path with `/` separators), or not at all (a target no root can contain, such
 * as a network share). `sameDrive`: an absolute path without a drive that
 * stays on the drive of the link (a Windows `\x`).
 */
export type LinkTarget =
  | { readonly kind: "absolute" | "relative"; readonly path: string; readonly sameDrive?: boolean }
  | { readonly kind: "refused"; readonly reason: string };

/**
 * A host path as a trusted base directory (a root) and the names below it, each to be opened without following links.
 */
export interface HostRef {
  readonly base: string;
  readonly names: readonly string[];
}

/** Maps config paths to host paths. */
export interface PathMapper {
  /** The host path of a config path (`/a/b` or `D:/a/b`). */
  hostPath(configPath: string): string;
  /** {@link hostPath} as its root and the names below it. */
  locate(configPath: string): HostRef;
  /** The text a symlink to config path `target` must contain on this host. */
  linkText(target: string): string;
  /** Where a link whose text is `text` leads, in config paths. */
  linkTarget(text: string): LinkTarget;
  /** Why a name of a config path cannot stand on this host (Windows' rules), or undefined when it can. */
  nameProblem?(name: string): string | undefined;
  /** Whether host paths that differ only in case name one node (Windows). */
  readonly foldCase?: boolean;
  /**
   * The bits of a mode the host keeps (default: all): Windows keeps only the
   * owner's write bit (the read-only attribute), and reads 0o666 or 0o444 back.
   */
  readonly modeBits?: number;
}

/** The host path a {@link HostRef} names. */
export function refPath(ref: HostRef): string {
  return ref.names.length === 0 ? ref.base : join(ref.base, ...ref.names);
}

/** POSIX link texts: absolute from the root, anything else from the link's directory. */
export function posixLinkTarget(text: string): LinkTarget {
  return { kind: text.startsWith("/") ? "absolute" : "relative", path: text };
}

/**
 * Maps everything below `root`: `/a` → `root/a`; a path on the system drive
 * (`C:/a` with the default) maps like `/a`; another drive maps below `root/D:`.
 * On Windows, where `D:` cannot be a name, another drive is that drive itself
 * when `root` is a drive's root (the host's own root, `C:\`), and `root\D`
 * below any other root; names are held to Windows' rules, and paths differing
 * only in case are one node. Link targets are stored as written, as Ignition
 * does: they resolve once `root` is the host's root, and while it is not, the
 * engine follows them as if it were.
 */
export function rootedMapper(
  root: string,
  systemDrive = "C",
  linkTarget?: (text: string) => LinkTarget,
  platform: NodeJS.Platform = process.platform,
): PathMapper {
  const windows = platform === "win32";
  const driveRoot = windows && /^[A-Za-z]:[\\/]?$/.test(root);
  const locate = (configPath: string): HostRef => {
    const { drive, names } = splitConfigPath(configPath);
    const below = names.filter((n) => n !== "");
    if (drive === "" || drive === `${systemDrive}:`) return { base: root, names: below };
    if (!windows) return { base: root, names: [drive, ...below] };
    return driveRoot ? { base: `${drive}\\`, names: below } : { base: root, names: [drive.slice(0, 1), ...below] };
  };
  return {
    hostPath: (configPath) => refPath(locate(configPath)),
    locate,
    linkText: (target) => target,
    linkTarget: linkTarget ?? (windows ? windowsLinkTarget : posixLinkTarget),
    ...(windows ? { nameProblem: windowsNameProblem, foldCase: true, modeBits: 0o200 } : {}),
  };
}

/** A node's identity (device and inode, or file index), or undefined when nothing is there; never follows a link. */
export function nodeIdentity(path: string): { dev: number; ino: number } | undefined {
  try {
    const s = lstatSync(path);
    return { dev: s.dev, ino: s.ino };
  } catch {
    return undefined;
  }
}

/**
 * Whether `ref` is the root itself or lies in the agent's state directory (`<root>/.winfleet`), which
 * no config may touch: by name, whatever its case, or as the same directory under another name (a
 * Windows short name such as `WINFLE~1`).
 */
export function reachesStateDir(
  ref: HostRef,
  stat: (path: string) => { dev: number; ino: number } | undefined = nodeIdentity,
): boolean {
  const first = ref.names[0];
  if (first === undefined) return true;
  if (first.toLowerCase() === STATE_DIR_NAME) return true;
  const state = stat(join(ref.base, STATE_DIR_NAME));
  const here = state && stat(join(ref.base, first));
  return state !== undefined && here !== undefined && here.dev === state.dev && here.ino === state.ino;
}
