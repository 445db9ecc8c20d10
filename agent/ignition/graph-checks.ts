/**
 * Checks across entries that Ignition makes once every entry is known: unique
 * paths (files, directories and links share one namespace), no entry below a link
 * the same config creates, no hard link to a directory the config creates.
 */
import type { IssueList } from "./checks";
import type { Entry } from "./model";

/** Adds an issue for every cross-entry conflict in `entries`. */
export function checkEntryGraph(entries: readonly Entry[], issues: IssueList): void {
  const byPath = new Map<string, Entry>();
  for (const e of entries) {
    if (byPath.has(e.path)) issues.error(e.at, "duplicate entry defined");
    else byPath.set(e.path, e);
  }
  const linkPaths = entries.filter((e) => e.kind === "link").map((e) => e.path);
  for (const e of entries) {
    const through = linkPaths.find((l) => e.path !== l && e.path.startsWith(l === "/" ? "/" : `${l}/`));
    if (through !== undefined) issues.error(e.at, `${e.kind} path includes link in config`);
  }
  for (const e of entries) {
    if (e.kind === "link" && e.hard && byPath.get(e.target)?.kind === "directory") {
      issues.error(e.at, "hard link target is a directory");
    }
  }
}
