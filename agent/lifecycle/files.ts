/**
 * The files phase and file removal: a component version's Ignition config is
 * applied with the Ignition engine (everything fetched, verified and planned
 * before the first write; re-applies are no-ops through the ledger), and a
 * version's files leave the host with it — never a path another installed
 * component also lays down, and never a directory that still holds something.
 */
import { lstat, rm, rmdir } from "node:fs/promises";
import { AgentError, AgentErrorCode } from "../common";
import {
  type FetchOptions,
  type PathMapper,
  applyIgnition,
  locateInRoot,
  openRootedFs,
  reachesStateDir,
  updateLedger,
} from "../ignition";
import { ledgerPath } from "./journal";
import type { Recorded } from "./store";

/** Where the engine's ledger lives under a root (kept with the journal, which `verify` reads without the engine). */
export { ledgerPath };

/** Metadata `files` entries as config paths: Windows drive paths and backslashes normalised. */
export function ownedPath(entry: string): string {
  const p = entry.replace(/\\/g, "/");
  const drive = /^([A-Za-z]):(\/.*)?$/.exec(p);
  return drive ? `${(drive[1] ?? "C").toUpperCase()}:${drive[2] ?? "/"}` : p.startsWith("/") ? p : `/${p}`;
}

/** Lays down `next`'s files; for an upgrade in place, first removes what `previous` had and `next` has not. */
export async function applyComponentFiles(
  root: string,
  mapper: PathMapper,
  next: Recorded,
  previous: Recorded | undefined,
  othersOwn: ReadonlySet<string>,
  fetch: FetchOptions,
): Promise<{ changed: number }> {
  if (previous) {
    const keep = new Set([...next.paths, ...next.metadata.files.map(ownedPath), ...othersOwn]);
    await removePaths(
      root,
      mapper,
      previous.paths.filter((p) => !keep.has(p)),
      false,
    );
    await removePaths(
      root,
      mapper,
      previous.metadata.files.map(ownedPath).filter((p) => !keep.has(p)),
      true,
    );
  }
  const report = await applyIgnition(next.config, { ...fetch, mapper, ledgerPath: ledgerPath(root) });
  return { changed: report.changed.length };
}

/** Removes a version's files and its metadata's `files` entries, except paths `othersOwn`. */
export async function removeComponentFiles(
  root: string,
  mapper: PathMapper,
  version: Recorded,
  othersOwn: ReadonlySet<string>,
): Promise<void> {
  await removePaths(
    root,
    mapper,
    version.paths.filter((p) => !othersOwn.has(p)),
    false,
  );
  await removePaths(
    root,
    mapper,
    version.metadata.files.map(ownedPath).filter((p) => !othersOwn.has(p)),
    true,
  );
}

// Ignition paths go one by one (a directory only when empty); a metadata `files`
// entry is the component's own (a log or state directory) and goes with what it holds.
// Each path is found as the apply found it, links in its parents followed inside
// the root, and reached without following a link: a removal never leaves the root.
async function removePaths(
  root: string,
  mapper: PathMapper,
  paths: readonly string[],
  recursive: boolean,
): Promise<void> {
  // Deepest first, so a directory is empty by the time it is reached.
  const ordered = [...new Set(paths)].sort((a, b) => b.split("/").length - a.split("/").length || (a < b ? 1 : -1));
  const rooted = openRootedFs();
  for (const p of ordered) {
    try {
      let host: string;
      try {
        const at = locateInRoot(mapper, p);
        // A metadata `files` entry naming the root, or the agent's own state, is refused, not removed.
        if (reachesStateDir(at))
          throw new AgentError(
            AgentErrorCode.PermissionDenied,
            `${p}: ${at.names.length === 0 ? "is the root itself" : "lies in the agent's state directory"}; a component's files never include it`,
          );
        host = rooted.pathOf(at);
      } catch (e) {
        // A parent is gone, or a link loops: nothing laid down is there.
        if (e instanceof AgentError && e.code !== AgentErrorCode.PermissionDenied) continue;
        throw e;
      }
      const s = await lstat(host).catch(() => undefined);
      if (!s) continue;
      if (s.isDirectory() && recursive) await rm(host, { recursive: true, force: true });
      else if (s.isDirectory())
        await rmdir(host).catch(() => undefined); // not empty: something else lives there
      else await rm(host, { force: true });
    } finally {
      rooted.release();
    }
  }
  await updateLedger(ledgerPath(root), {}, paths);
}
