/**
 * Which host binaries a container may start. Paths compare case-insensitively
 * after normalisation; anything that could name a file other than the one it
 * seems to — `.`/`..` segments, trailing dots or spaces (Windows drops them),
 * relative, UNC and device paths, alternate data streams, reserved device names,
 * a symlink anywhere along the path — is refused outright rather than resolved.
 */
import { lstat } from "node:fs/promises";
import { AgentError, AgentErrorCode } from "../common";

// The superscript digits (COM¹ and so on) as escapes: bundles are kept ASCII (see release/build.ts).
const RESERVED = /^(con|prn|aux|nul|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])(\..*)?$/i;

/** Refuses with INVALID_ARGUMENT. */
function refuse(path: string, why: string): never {
  throw new AgentError(AgentErrorCode.InvalidInput, `invalid path ${JSON.stringify(path)}: ${why}`);
}

/**
 * The normalised form of an absolute host path (`/` separators, lower-case drive
 * letter), or an error saying why it is refused.
 */
export function normaliseHostPath(path: string, platform: NodeJS.Platform): string {
  if (path === "") refuse(path, "a path is required");
  if (path.includes("\0")) refuse(path, "contains a NUL character");
  if (/^[\\/]{2}/.test(path))
    refuse(path, "UNC and device paths (\\\\server\\share, \\\\.\\, \\\\?\\) are not allowed");
  const windows = platform === "win32";
  let body: string;
  let prefix: string;
  if (windows) {
    const m = /^([A-Za-z]):[\\/]/.exec(path);
    if (!m) refuse(path, "must be an absolute path with a drive letter");
    prefix = `${(m[1] ?? "").toLowerCase()}:`;
    body = path.slice(2);
  } else {
    if (!path.startsWith("/")) refuse(path, "must be an absolute path");
    prefix = "";
    body = path;
  }
  const segments = body.split(windows ? /[\\/]/ : "/").slice(1);
  for (const s of segments) {
    if (s === "") refuse(path, "empty path segment (doubled separator)");
    if (s === "." || s === "..") refuse(path, "'.' and '..' segments are not allowed");
    if (/[. ]$/.test(s)) refuse(path, "a segment ends with a dot or a space");
    if (windows && s.includes(":")) refuse(path, "alternate data streams are not allowed");
    if (windows && RESERVED.test(s)) refuse(path, `${s} is a reserved device name`);
  }
  return `${prefix}/${segments.join("/")}`;
}

/**
 * Checks requested process paths against the whitelist. Matching ignores case,
 * as wins did; on a case-sensitive filesystem a request that differs in case from
 * its entry names another file, so it is refused rather than matched.
 */
export class ProcessPathPolicy {
  /** Lower-cased entry → the entry as configured (normalised). */
  private readonly allowed: ReadonlyMap<string, string>;

  constructor(
    entries: readonly string[],
    private readonly allowAll: boolean,
    private readonly platform: NodeJS.Platform = process.platform,
    private readonly lstatFn: (p: string) => Promise<{ isSymbolicLink(): boolean }> = lstat,
  ) {
    this.allowed = new Map(entries.map((e) => normaliseHostPath(e, platform)).map((n) => [n.toLowerCase(), n]));
  }

  /** Resolves when `path` may run; throws an INVALID_ARGUMENT catalog error when it may not. */
  async check(path: string): Promise<void> {
    const normalised = normaliseHostPath(path, this.platform);
    if (!this.allowAll) {
      if (this.allowed.size === 0)
        refuse(path, "the process whitelist is empty, so nothing may run (set allowAll: true to allow any path)");
      const entry = this.allowed.get(normalised.toLowerCase());
      if (entry === undefined) refuse(path, "not in the process whitelist");
      if (this.platform !== "win32" && entry !== normalised)
        refuse(path, `differs in case from the whitelisted ${entry}, which on this filesystem is another file`);
    }
    const sep = this.platform === "win32" ? /[\\/]/ : /\//;
    const parts = path.split(sep);
    for (let i = 2; i <= parts.length; i++) {
      const prefix = parts.slice(0, i).join(this.platform === "win32" ? "\\" : "/");
      try {
        if ((await this.lstatFn(prefix)).isSymbolicLink()) refuse(path, `${prefix} is a symbolic link`);
      } catch (e) {
        if (e instanceof AgentError) throw e;
        return; // a missing component is reported by the binary check that follows
      }
    }
  }
}
