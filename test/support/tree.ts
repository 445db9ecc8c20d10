/**
 * A directory tree as comparable data: every node's relative path, type, mode,
 * content digest and link target.
 */
import { createHash } from "node:crypto";
import { lstatSync, readFileSync, readdirSync, readlinkSync } from "node:fs";
import { join, relative } from "node:path";

/** One node of a tree. */
export interface TreeNode {
  readonly path: string;
  readonly type: "file" | "dir" | "symlink" | "other";
  readonly mode: string;
  readonly sha256?: string;
  readonly target?: string;
  /** Hard-link count, so a hard link shows as a file with nlink 2. */
  readonly nlink?: number;
}

/** Every node under `root` except `ignore`d relative paths (and what is below them). */
export function snapshotTree(root: string, ignore: readonly string[] = []): TreeNode[] {
  const out: TreeNode[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      const rel = relative(root, full);
      if (ignore.some((i) => rel === i || rel.startsWith(`${i}/`))) continue;
      const s = lstatSync(full);
      const mode = (s.mode & 0o7777).toString(8).padStart(4, "0");
      if (s.isSymbolicLink()) out.push({ path: rel, type: "symlink", mode: "-", target: readlinkSync(full) });
      else if (s.isFile())
        out.push({
          path: rel,
          type: "file",
          mode,
          nlink: s.nlink,
          sha256: createHash("sha256").update(readFileSync(full)).digest("hex"),
        });
      else if (s.isDirectory()) {
        out.push({ path: rel, type: "dir", mode });
        walk(full);
      } else out.push({ path: rel, type: "other", mode });
    }
  };
  walk(root);
  return out;
}
