/**
 * The semantic checks Ignition's Go validation makes beyond JSON types: paths,
 * modes, URLs, hashes, headers. Shared by both spec lines; messages use
 * Ignition's own wording so a person comparing with `ignition-validate` sees the same.
 */
import { posix } from "node:path";
import type { Issue } from "../common";
import { DataUrlError, decodeDataUrl } from "./data-url";
import type { Hash, HashFunction } from "./model";

/** Collects issues at dotted paths. */
export class IssueList {
  readonly issues: Issue[] = [];
  error(path: string, message: string): void {
    this.issues.push({ path, message, severity: "error" });
  }
  warn(path: string, message: string): void {
    this.issues.push({ path, message, severity: "warning" });
  }
  get hasErrors(): boolean {
    return this.issues.some((i) => i.severity === "error");
  }
}

const DRIVE = /^([A-Za-z]):[\\/]/;

/**
 * Validates and canonicalises a node path. POSIX-absolute paths follow Ignition
 * (absolute, fully simplified). A Windows drive path (`C:\x` or `C:/x`) is
 * winfleet's extension: separators become `/` and the drive letter upper case.
 */
export function checkPath(p: string | null | undefined, at: string, issues: IssueList): string | undefined {
  if (p === undefined || p === null || p === "") {
    issues.error(at, "path not specified");
    return undefined;
  }
  if (p.includes("\0")) {
    issues.error(at, "path contains a NUL character");
    return undefined;
  }
  const drive = DRIVE.exec(p);
  const body = drive ? p.slice(2).replace(/\\/g, "/") : p;
  if (!posix.isAbsolute(body)) {
    issues.error(at, "path not absolute");
    return undefined;
  }
  if (posix.normalize(body) !== body || (body.length > 1 && body.endsWith("/"))) {
    issues.error(at, "path is not fully simplified");
    return undefined;
  }
  return drive ? `${(drive[1] ?? "").toUpperCase()}:${body}` : body;
}

/** Checks a permission mode; `specialBitsSupported` is false before spec 3.4. */
export function checkMode(
  mode: number | null | undefined,
  at: string,
  issues: IssueList,
  specialBitsSupported: boolean,
): void {
  if (mode === undefined || mode === null) return;
  if (mode < 0 || mode > 0o7777) issues.error(at, "illegal file mode");
  if (!specialBitsSupported && (mode & 0o7000) !== 0) {
    issues.warn(at, "setuid/setgid/sticky bits are not supported in spec versions older than 3.4.0");
  }
}

/** The URL scheme as Go's net/url sees it (lower-cased), or "" when there is none. */
export function urlScheme(source: string): string {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(source);
  return m?.[1]?.toLowerCase() ?? "";
}

/** winfleet's scheme for files shipped inside a content bundle: `bundle:///relative/path`. */
export const BUNDLE_SCHEME = "bundle";

/** Checks a source URL's scheme and, for `data:`, that it decodes; returns the bytes of a valid `data:` URL. */
export function checkSource(
  source: string,
  at: string,
  issues: IssueList,
  schemes: readonly string[],
): Buffer | undefined {
  if (source === "") return undefined; // Ignition accepts an empty source at validation time
  const scheme = urlScheme(source);
  if (!schemes.includes(scheme)) {
    issues.error(at, "invalid url scheme");
    return undefined;
  }
  if (scheme === "data") {
    try {
      return decodeDataUrl(source).data;
    } catch (e) {
      if (e instanceof DataUrlError) issues.error(at, e.message);
      else throw e;
    }
  }
  if (scheme === BUNDLE_SCHEME) {
    const rel = bundlePath(source);
    if (rel === undefined) issues.error(at, "bundle URL must be bundle:///<relative path> without '..'");
  }
  return undefined;
}

/** The path inside the bundle a `bundle:` URL names, or undefined when it is malformed or escapes. */
export function bundlePath(source: string): string | undefined {
  const m = /^bundle:\/\/\/(.+)$/i.exec(source);
  if (!m?.[1]) return undefined;
  const rel = decodeURIComponent(m[1]);
  if (rel.split("/").some((s) => s === ".." || s === "." || s === "") || rel.includes("\\")) return undefined;
  return rel;
}

const HASH_HEX_LENGTH: Record<HashFunction, number> = { sha512: 128, sha256: 64 };

/** Parses `verification.hash`; `functions` lists those the spec version knows. */
export function checkHash(
  spec: string,
  at: string,
  issues: IssueList,
  functions: readonly HashFunction[],
): Hash | undefined {
  const dash = spec.indexOf("-");
  if (dash < 0) {
    issues.error(at, "malformed hash specifier");
    return undefined;
  }
  const fn = spec.slice(0, dash) as HashFunction;
  const hex = spec.slice(dash + 1);
  if (!functions.includes(fn)) {
    issues.error(at, "unrecognized hash function");
    return undefined;
  }
  if (hex.length !== HASH_HEX_LENGTH[fn] || !/^[0-9a-fA-F]*$/.test(hex)) {
    issues.error(at, "incorrect size for hash sum");
    return undefined;
  }
  return { function: fn, hex: hex.toLowerCase() };
}

/** Systemd unit suffixes Ignition accepts. */
const UNIT_TYPES = [
  ".service",
  ".socket",
  ".device",
  ".mount",
  ".automount",
  ".swap",
  ".target",
  ".path",
  ".timer",
  ".snapshot",
  ".slice",
  ".scope",
];

/** Checks a systemd unit name's extension. */
export function checkUnitName(name: string | null | undefined, at: string, issues: IssueList): void {
  if (!UNIT_TYPES.some((t) => (name ?? "").endsWith(t))) issues.error(at, "invalid systemd unit extension");
}

/** Checks a systemd drop-in name's extension. */
export function checkDropinName(name: string | null | undefined, at: string, issues: IssueList): void {
  if (!(name ?? "").endsWith(".conf")) issues.error(at, "invalid systemd drop-in extension");
}
