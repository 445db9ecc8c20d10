/**
 * Drift: every node the installed components laid down, compared with what was
 * applied — a file's bytes (SHA-512 against the ledger) and mode, a
 * directory's existence and mode, a link's target. Reads only; the report names
 * each component, path and problem.
 */
import { type Stats, lstatSync } from "node:fs";
import { readlink } from "node:fs/promises";
import { type PathMapper, locateInRoot, readLedger, refPath } from "../ignition";
import type { DriftItem } from "./events";
import { type HashLane, hashLanes } from "./file-hash";
import { ledgerPath, readJournal } from "./journal";
import { recorded } from "./store";

/** What verification found. */
export interface VerifyReport {
  readonly items: readonly DriftItem[];
  /** Nodes checked. */
  readonly checked: number;
}

/**
 * A path's lstat, or undefined where there is nothing. Synchronous, as the
 * lookup of its parents is: through the pool it costs more than the call.
 */
function lstatOf(host: string | undefined): Stats | undefined {
  if (host === undefined) return undefined;
  try {
    return lstatSync(host);
  } catch {
    return undefined;
  }
}

/** Compares the host with what the installed components applied. */
export async function verifyHost(
  root: string,
  mapper: PathMapper,
  platform: NodeJS.Platform = process.platform,
): Promise<VerifyReport> {
  const journal = await readJournal(root);
  const ledger = await readLedger(ledgerPath(root));
  const checks: ((lane: HashLane) => Promise<DriftItem | undefined>)[] = [];
  const checkModes = platform !== "win32"; // NTFS has no POSIX modes to compare
  // Where the apply put each path: links in its parents followed inside the root, never out of it.
  const where = (path: string): string | undefined => {
    try {
      return refPath(locateInRoot(mapper, path));
    } catch {
      return undefined; // a link loop or one no root contains: the apply could not have written there
    }
  };
  for (const i of journal.installed) {
    if (i.pending === "remove") continue;
    const { config } = await recorded(root, i.name, i.version);
    const drift = (path: string, problem: DriftItem["problem"]): DriftItem => ({ component: i.name, path, problem });
    for (const f of config.files) {
      checks.push(async (lane) => {
        const host = where(f.path);
        const s = lstatOf(host);
        if (!s || host === undefined) return drift(f.path, "missing");
        if (!s.isFile()) return drift(f.path, "type");
        const expected = ledger.files[f.path];
        if (!expected) return undefined;
        if (checkModes && (s.mode & 0o7777) !== expected.mode) return drift(f.path, "mode");
        return (await lane.sha512(host, s.size)) === expected.sha512 ? undefined : drift(f.path, "content");
      });
    }
    for (const d of config.directories) {
      const check = (): DriftItem | undefined => {
        const s = lstatOf(where(d.path));
        if (!s) return drift(d.path, "missing");
        if (!s.isDirectory()) return drift(d.path, "type");
        const expected = ledger.files[d.path];
        return checkModes && expected && (s.mode & 0o7777) !== expected.mode ? drift(d.path, "mode") : undefined;
      };
      checks.push(() => Promise.resolve(check()));
    }
    for (const l of config.links) {
      checks.push(async () => {
        const host = where(l.path);
        const s = lstatOf(host);
        if (!s || host === undefined) return drift(l.path, "missing");
        if (l.hard) {
          const targetHost = where(l.target);
          const target = lstatOf(targetHost);
          return target && target.ino === s.ino && target.dev === s.dev ? undefined : drift(l.path, "content");
        }
        if (!s.isSymbolicLink()) return drift(l.path, "type");
        return (await readlink(host)) === mapper.linkText(l.target) ? undefined : drift(l.path, "content");
      });
    }
  }
  const items: DriftItem[] = [];
  let next = 0;
  // One worker per lane: each hashes one file at a time into the lane's buffer.
  const worker = async (lane: HashLane): Promise<void> => {
    while (next < checks.length) {
      const check = checks[next++];
      const found = check ? await check(lane) : undefined;
      if (found) items.push(found);
    }
  };
  await Promise.all(hashLanes().map(worker));
  items.sort((a, b) => (a.component === b.component ? (a.path < b.path ? -1 : 1) : a.component < b.component ? -1 : 1));
  return { items, checked: checks.length };
}
