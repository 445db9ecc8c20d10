/**
 * Resolving config paths inside the root. A link met in a path's parent chain
 * is followed as if the root were `/`: an absolute target starts again at the
 * root (of its drive), a relative one continues from the link's directory, and
 * `..` never climbs above the root. This is how CoreOS Ignition resolves node
 * paths under its `--root` (its JoinPath), carried through every link of a
 * chain, so no path the engine touches is reached through the host's own
 * resolution of a link. The final component is never followed.
 */
import { AgentError, AgentErrorCode } from "../common";
import type { LinkTarget } from "./paths";

/** What stands at a config path, as far as resolution needs to know. */
export type PathNode =
  { readonly type: "symlink"; readonly text: string } | { readonly type: "absent" | "file" | "dir" | "other" };

/** Reads what stands at a config path whose parents are already resolved. */
export type NodeLookup = (configPath: string) => PathNode;

/** Links followed in one resolution before it is called a loop (Linux's MAXSYMLINKS). */
export const MAX_LINK_HOPS = 40;

/** A config path split into its drive (`""` for the system drive, `"D:"` otherwise) and names. */
export interface SplitPath {
  readonly drive: string;
  readonly names: readonly string[];
}

const DRIVE = /^([A-Za-z]):(?:[\\/]|$)/;

/** Splits a config path (or a hard link's raw target: root-relative when not absolute). */
export function splitConfigPath(path: string): SplitPath {
  const m = DRIVE.exec(path);
  const drive = m ? `${(m[1] ?? "").toUpperCase()}:` : "";
  const body = m ? path.slice(2).replace(/\\/g, "/") : path;
  return { drive, names: body.split("/") };
}

/** Formats a drive and names as a config path (`/a/b`, `D:/a/b`). */
export function joinConfigPath(drive: string, names: readonly string[]): string {
  return `${drive}/${names.join("/")}`;
}

/**
 * Resolves every component of `path` but the last, following links inside the
 * root; returns the config path of the node `path` names. `what` names the
 * path in errors (a loop, or a link whose target cannot stand below a root).
 */
export function resolveInRoot(
  path: string,
  lookup: NodeLookup,
  linkTarget: (text: string) => LinkTarget,
  what: string = path,
): string {
  const { drive: startDrive, names } = splitConfigPath(path);
  let last = names[names.length - 1] ?? "";
  const todo = names.slice(0, -1);
  // A path ending in `.` or `..` (only a hard link's raw target can) names a directory.
  if (last === "." || last === ".." || last === "") {
    todo.push(last);
    last = "";
  }
  let drive = startDrive;
  const out: string[] = [];
  let hops = 0;
  while (todo.length > 0) {
    const name = todo.shift() ?? "";
    if (name === "" || name === ".") continue;
    if (name === "..") {
      out.pop();
      continue;
    }
    const here = joinConfigPath(drive, [...out, name]);
    const node = lookup(here);
    if (node.type !== "symlink") {
      out.push(name);
      continue;
    }
    if (++hops > MAX_LINK_HOPS)
      throw new AgentError(
        AgentErrorCode.ApplyFailed,
        `${what}: more than ${MAX_LINK_HOPS} links in its parent chain (a loop?)`,
      );
    const target = linkTarget(node.text);
    if (target.kind === "refused") {
      throw new AgentError(
        AgentErrorCode.ApplyFailed,
        `${what}: ${here} is a link to ${node.text}, which ${target.reason}`,
      );
    }
    const next = splitConfigPath(target.path);
    if (target.kind === "absolute") {
      if (target.sameDrive !== true) drive = next.drive;
      out.length = 0;
    }
    // Ignition cleans a link's target as text before it goes on (`x/../y` is `y`
    // even when `x` is a link); a leading `..` leaves the link's own directory.
    const names: string[] = [];
    for (const n of next.names) {
      if (n === "" || n === ".") continue;
      if (n !== "..") names.push(n);
      else if (names.length > 0) names.pop();
      else out.pop();
    }
    todo.unshift(...names);
  }
  return last === "" ? joinConfigPath(drive, out) : joinConfigPath(drive, [...out, last]);
}
