/**
 * Planning an apply: every decision Ignition's files stage would make, taken up
 * front against a virtual view of the host, so that a config that would fail
 * half-way fails before anything is written. The result is a list of primitive
 * operations that {@link executePlan} carries out.
 */
import { createHash } from "node:crypto";
import { lstatSync, readlinkSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { AgentError, AgentErrorCode } from "../common";
import { type Ledger, sha512 } from "./ledger";
import type { DirectoryEntry, Entry, FileEntry, IgnitionConfig, LinkEntry } from "./model";
import { type HostRef, type PathMapper, reachesStateDir, refPath } from "./paths";
import { type NodeLookup, resolveInRoot } from "./resolve";

/** The longest file name ext4, XFS and NTFS all accept, checked before anything is written. */
const NAME_MAX = 255;

/** The ledger's digest for a directory, which has no bytes. */
export const DIRECTORY_DIGEST = "directory";

/**
 * One primitive change to the host: `host` is the path, `at` the same path as
 * the root and the names below it that are opened without following links.
 */
export type Operation = { readonly host: string; readonly at: HostRef } & (
  | { readonly op: "mkdir"; readonly mode: number }
  | { readonly op: "remove" }
  | { readonly op: "write"; readonly data: Buffer; readonly mode: number }
  | { readonly op: "chmod"; readonly mode: number }
  | { readonly op: "symlink"; readonly text: string }
  | { readonly op: "hardlink"; readonly existing: HostRef }
);

/** Where an entry lands: its host path, and the same as root and names. */
interface Place {
  readonly host: string;
  readonly at: HostRef;
}

/** Bytes resolved for one file entry. */
export interface ResolvedFile {
  readonly contents: Buffer | undefined;
  readonly append: readonly Buffer[];
}

/** What {@link planApply} decided. */
export interface ApplyPlan {
  readonly operations: readonly Operation[];
  /** Config paths whose node changes. */
  readonly changed: readonly string[];
  /** Config paths already in the desired state. */
  readonly unchanged: readonly string[];
  /** Ledger records to store for files, keyed by config path. */
  readonly ledger: Ledger["files"];
}

type NodeState =
  | { readonly type: "absent" }
  | {
      readonly type: "file";
      readonly mode: number;
      readonly ino: number;
      /** Names the file has (its link count): more than one, and a mode change would reach them all. */
      readonly links: number;
      readonly read: () => Promise<Buffer>;
    }
  | { readonly type: "dir"; readonly mode: number }
  | { readonly type: "symlink"; readonly text: string }
  | { readonly type: "other" };

/**
 * The host as it will be after the operations planned so far. Paths are kept
 * by `key`: on Windows, paths differing only in case are one node, as there.
 */
class VirtualHost {
  private readonly planned = new Map<string, NodeState>();
  private readonly removed: string[] = [];
  /** What the disk held, per path: resolution reads each parent once per entry. */
  private readonly disk = new Map<string, NodeState>();

  constructor(
    readonly key: (host: string) => string = (host) => host,
    /** The bits of a mode the host keeps. */
    readonly modeBits = 0o7777,
  ) {}

  // Synchronous: a stat costs microseconds, a trip through libuv's thread pool
  // ten times that, and a plan makes one per entry and parent. Never follows a
  // link: the paths looked up have resolved parents.
  lookup(host: string): NodeState {
    const k = this.key(host);
    const p = this.planned.get(k);
    if (p) return p;
    if (this.removed.some((r) => k === r || k.startsWith(`${r}/`) || k.startsWith(`${r}\\`))) return { type: "absent" };
    const known = this.disk.get(k);
    if (known) return known;
    const state = this.stat(host);
    this.disk.set(k, state);
    return state;
  }

  /** Resolution's view of this host: config paths through `mapper`. */
  nodes(mapper: PathMapper): NodeLookup {
    return (configPath) => {
      const state = this.lookup(mapper.hostPath(configPath));
      return state.type === "symlink" ? state : { type: state.type };
    };
  }

  private stat(host: string): NodeState {
    try {
      const s = lstatSync(host);
      if (s.isFile())
        return { type: "file", mode: s.mode & 0o7777, ino: s.ino, links: s.nlink, read: () => readFile(host) };
      if (s.isDirectory()) return { type: "dir", mode: s.mode & 0o7777 };
      if (s.isSymbolicLink()) return { type: "symlink", text: readlinkSync(host) };
      return { type: "other" };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return { type: "absent" };
      if (code === "ENOTDIR") return { type: "absent" }; // below a file: nothing can be there
      throw e;
    }
  }

  set(host: string, state: NodeState): void {
    this.planned.set(this.key(host), state);
  }

  remove(host: string): void {
    const k = this.key(host);
    for (const key of this.planned.keys())
      if (key === k || key.startsWith(`${k}/`) || key.startsWith(`${k}\\`)) this.planned.delete(key);
    this.removed.push(k);
    this.planned.set(k, { type: "absent" });
  }
}

/** Ignition's order: parents before children (stable by list), hard links last. */
export function creationOrder(config: IgnitionConfig): Entry[] {
  const depth = (e: Entry): number => e.path.split("/").length;
  const all: Entry[] = [...config.directories, ...config.files, ...config.links.filter((l) => !l.hard)];
  const sorted = all
    .map((e, i) => ({ e, i }))
    .sort((a, b) => depth(a.e) - depth(b.e) || a.i - b.i)
    .map((x) => x.e);
  return [...sorted, ...config.links.filter((l) => l.hard)];
}

/** A digest of everything that decides what a file entry writes. */
export function fingerprint(entry: FileEntry, resolved: ResolvedFile): string {
  const body = JSON.stringify({
    contents: resolved.contents === undefined ? null : sha512(resolved.contents),
    append: resolved.append.map(sha512),
    mode: entry.mode ?? null,
    overwrite: entry.overwrite,
  });
  return createHash("sha256").update(body).digest("hex");
}

function conflict(entry: Entry, message: string): AgentError {
  return new AgentError(AgentErrorCode.Conflict, `${entry.at} (${entry.path}): ${message}`);
}

/** Plans the whole apply; throws an {@link AgentError} for the first conflict, having changed nothing. */
export async function planApply(
  config: IgnitionConfig,
  resolved: ReadonlyMap<FileEntry, ResolvedFile>,
  mapper: PathMapper,
  previous: Ledger,
): Promise<ApplyPlan> {
  const view = new VirtualHost(mapper.foldCase ? (host) => host.toLowerCase() : undefined, mapper.modeBits);
  const ops: Operation[] = [];
  const changed: string[] = [];
  const unchanged: string[] = [];
  const ledger: Ledger["files"] = {};

  for (const [entry, place] of resolvePlaces(creationOrder(config), mapper, view)) {
    const before = ops.length;
    ensureParents(entry, place, view, ops);
    const parentsMade = ops.length > before;
    let same: boolean;
    if (entry.kind === "file") {
      const r = resolved.get(entry) ?? { contents: undefined, append: [] };
      same = await planFile(entry, place, r, view, ops, previous, ledger);
    } else if (entry.kind === "directory") {
      same = planDirectory(entry, place, view, ops, previous, ledger);
    } else {
      same = planLink(entry, place, mapper, view, ops);
    }
    (same && !parentsMade ? unchanged : changed).push(entry.path);
  }
  return { operations: ops, changed, unchanged, ledger };
}

/**
 * Where every entry lands, resolved against the host as it is before anything
 * is written, as Ignition resolves every path before it creates the first node;
 * two entries that meet at one node are refused, as Ignition refuses them.
 */
function resolvePlaces(entries: readonly Entry[], mapper: PathMapper, view: VirtualHost): [Entry, Place][] {
  const claimed = new Map<string, string>();
  return entries.map((entry) => {
    const long = entry.path.split("/").find((name) => Buffer.byteLength(name) > NAME_MAX);
    if (long !== undefined)
      throw new AgentError(
        AgentErrorCode.ApplyFailed,
        `${entry.at}.path: the name ${long.slice(0, 20)}… is longer than ${NAME_MAX} bytes`,
      );
    checkNames(entry.path, mapper, `${entry.at}.path (${entry.path})`);
    const path = resolveInRoot(
      entry.path,
      view.nodes(mapper),
      (text) => mapper.linkTarget(text),
      `${entry.at}.path (${entry.path})`,
    );
    const place: Place = { host: mapper.hostPath(path), at: mapper.locate(path) };
    if (reachesStateDir(place.at))
      throw new AgentError(
        AgentErrorCode.PermissionDenied,
        `${entry.at}.path (${entry.path}): ${place.at.names.length === 0 ? "is the root itself" : "resolves into the agent's state directory"} (${place.host}), which no config may touch`,
      );
    const other = claimed.get(view.key(place.host));
    if (other !== undefined)
      throw conflict(
        entry,
        `resolves to ${path} after following links, where ${other} also resolves${mapper.foldCase ? " (names differing only in case are one on this host)" : ""}`,
      );
    claimed.set(view.key(place.host), entry.path);
    return [entry, place];
  });
}

/** Whether two modes are one on this host (Windows keeps only whether the owner may write). */
function sameMode(a: number, b: number, view: VirtualHost): boolean {
  return (a & view.modeBits) === (b & view.modeBits);
}

/** Refuses a config path with a name this host cannot hold (Windows' rules), before anything is written. */
function checkNames(path: string, mapper: PathMapper, what: string): void {
  if (!mapper.nameProblem) return;
  for (const name of path.replace(/^[A-Za-z]:/, "").split("/")) {
    const problem = name === "" ? undefined : mapper.nameProblem(name);
    if (problem !== undefined)
      throw new AgentError(AgentErrorCode.InvalidInput, `${what}: ${JSON.stringify(name)} ${problem}`);
  }
}

// The parents are resolved already: each is a directory, absent, or in the way;
// none is a link. The root itself is never created.
function ensureParents(entry: Entry, place: Place, view: VirtualHost, ops: Operation[]): void {
  const missing: Place[] = [];
  const { base, names } = place.at;
  for (let n = names.length - 1; n > 0; n--) {
    const at = { base, names: names.slice(0, n) };
    const dir = refPath(at);
    const state = view.lookup(dir);
    if (state.type === "dir") break;
    if (state.type !== "absent") throw conflict(entry, `${dir} exists and is not a directory`);
    missing.unshift({ host: dir, at });
  }
  for (const dir of missing) {
    ops.push({ op: "mkdir", ...dir, mode: 0o755 });
    view.set(dir.host, { type: "dir", mode: 0o755 });
  }
}

async function planFile(
  entry: FileEntry,
  place: Place,
  r: ResolvedFile,
  view: VirtualHost,
  ops: Operation[],
  previous: Ledger,
  ledger: Ledger["files"],
): Promise<boolean> {
  const { host } = place;
  const fp = fingerprint(entry, r);
  let existing = view.lookup(host);
  const record = previous.files[entry.path];
  const matchesLedger = async (state: NodeState): Promise<boolean> =>
    state.type === "file" && record?.fingerprint === fp && record.sha512 === sha512(await state.read());

  let data: Buffer;
  let mode: number;
  if (entry.overwrite || existing.type === "absent") {
    data = Buffer.concat([r.contents ?? Buffer.alloc(0), ...r.append]);
    mode = entry.mode ?? 0o644;
  } else if (existing.type !== "file") {
    throw conflict(entry, "a non regular file exists there already and overwrite is false");
  } else if (r.contents !== undefined || entry.contents?.source !== undefined) {
    if (!(await matchesLedger(existing))) throw conflict(entry, "a file exists there already and overwrite is false");
    data = await existing.read();
    mode = entry.mode ?? existing.mode;
  } else {
    const current = await existing.read();
    data = r.append.length === 0 || (await matchesLedger(existing)) ? current : Buffer.concat([current, ...r.append]);
    mode = entry.mode ?? existing.mode;
  }
  ledger[entry.path] = { fingerprint: fp, sha512: sha512(data), mode, host };

  if (existing.type === "file") {
    const current = existing;
    const sameBytes = (await current.read()).equals(data);
    if (sameBytes && sameMode(current.mode, mode, view)) return true;
    // A file with other names (hard links, which may lie outside the root) is replaced, never
    // changed in place: a chmod reaches the inode, so every name of it, wherever it is.
    if (sameBytes && current.links <= 1) {
      ops.push({ op: "chmod", ...place, mode });
      view.set(host, { ...current, mode });
      return false;
    }
  } else if (existing.type !== "absent") {
    ops.push({ op: "remove", ...place });
    view.remove(host);
    existing = { type: "absent" };
  }
  ops.push({ op: "write", ...place, data, mode });
  view.set(host, { type: "file", mode, ino: -1, links: 1, read: () => Promise.resolve(data) });
  return false;
}

// A directory is recorded too: overwrite empties it on the first apply, as in
// Ignition, but a re-apply of the same entry must not wipe what the config put inside.
function planDirectory(
  entry: DirectoryEntry,
  place: Place,
  view: VirtualHost,
  ops: Operation[],
  previous: Ledger,
  ledger: Ledger["files"],
): boolean {
  const { host } = place;
  const existing = view.lookup(host);
  const fp = `directory:${entry.overwrite}:${entry.mode ?? "-"}`;
  const mode = entry.mode ?? (existing.type === "dir" ? existing.mode : 0o755);
  ledger[entry.path] = { fingerprint: fp, sha512: DIRECTORY_DIGEST, mode, host };
  const reapplied = previous.files[entry.path]?.fingerprint === fp;
  if (existing.type === "dir" && (!entry.overwrite || reapplied)) {
    if (entry.mode === undefined || sameMode(entry.mode, existing.mode, view)) return true;
    ops.push({ op: "chmod", ...place, mode: entry.mode });
    view.set(host, { type: "dir", mode: entry.mode });
    return false;
  }
  if (existing.type !== "absent") {
    if (!entry.overwrite) throw conflict(entry, "a non-directory exists there already and overwrite is false");
    ops.push({ op: "remove", ...place });
    view.remove(host);
  }
  ops.push({ op: "mkdir", ...place, mode: entry.mode ?? 0o755 });
  view.set(host, { type: "dir", mode: entry.mode ?? 0o755 });
  ledger[entry.path] = { fingerprint: fp, sha512: DIRECTORY_DIGEST, mode: entry.mode ?? 0o755, host };
  return false;
}

function planLink(entry: LinkEntry, place: Place, mapper: PathMapper, view: VirtualHost, ops: Operation[]): boolean {
  const { host } = place;
  const existing = view.lookup(host);
  if (entry.hard) {
    // The target resolves inside the root as the path does: `..` stops at the
    // root and links in its parents are followed as if the root were `/`.
    checkNames(entry.target, mapper, `${entry.at}.target (${entry.target})`);
    const targetPath = resolveInRoot(
      entry.target,
      view.nodes(mapper),
      (text) => mapper.linkTarget(text),
      `${entry.at}.target`,
    );
    const targetHost = mapper.hostPath(targetPath);
    if (reachesStateDir(mapper.locate(targetPath)))
      throw new AgentError(
        AgentErrorCode.PermissionDenied,
        `${entry.at}.target (${entry.target}): resolves into the agent's state directory (${targetHost}), which no config may link to`,
      );
    // A link to itself: Ignition finds the node the same file as its target and
    // keeps it, unless overwrite removed it first and left nothing to link to.
    if (view.key(targetHost) === view.key(host)) {
      if (existing.type === "absent") throw conflict(entry, `hard link target ${entry.target} does not exist`);
      if (entry.overwrite)
        throw conflict(entry, `hard link target ${entry.target} is the link's own path, which overwrite removes first`);
      return true;
    }
    const target = view.lookup(targetHost);
    if (target.type === "absent") throw conflict(entry, `hard link target ${entry.target} does not exist`);
    if (target.type === "dir") throw conflict(entry, "hard link target is a directory");
    if (existing.type === "file" && target.type === "file" && target.ino >= 0 && existing.ino === target.ino)
      return true;
    if (existing.type !== "absent") {
      if (!entry.overwrite)
        throw conflict(entry, "a file already exists at that path but is not the target and overwrite is false");
      ops.push({ op: "remove", ...place });
      view.remove(host);
    }
    ops.push({ op: "hardlink", ...place, existing: mapper.locate(targetPath) });
    view.set(host, target);
    return false;
  }
  const text = mapper.linkText(entry.target);
  if (existing.type === "symlink" && existing.text === text) return true;
  if (existing.type !== "absent") {
    if (!entry.overwrite) {
      const what =
        existing.type === "symlink"
          ? `a symlink exists at that path but points to ${existing.text}, not ${text}`
          : "a non-symlink exists at that path";
      throw conflict(entry, `${what} and overwrite is false`);
    }
    ops.push({ op: "remove", ...place });
    view.remove(host);
  }
  ops.push({ op: "symlink", ...place, text });
  view.set(host, { type: "symlink", text });
  return false;
}
