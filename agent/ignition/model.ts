/**
 * The one internal model both Ignition spec lines (2.2 and 3.x) normalise into.
 * Every default of the source spec is already resolved here, so the applier never
 * asks which spec a config came from.
 */

/** A supported hash function, as Ignition names it. */
export type HashFunction = "sha512" | "sha256";

/** An expected digest of a resource's (decompressed) bytes. */
export interface Hash {
  readonly function: HashFunction;
  /** Lowercase hex. */
  readonly hex: string;
}

/** An HTTP header sent when fetching an http(s) source. */
export interface HttpHeader {
  readonly name: string;
  readonly value: string | undefined;
}

/** Where bytes come from: file contents or one append fragment. */
export interface Resource {
  /** A `data:`, `http(s):` or `bundle:` URL; undefined means "no source". */
  readonly source: string | undefined;
  readonly compression: "gzip" | undefined;
  readonly httpHeaders: readonly HttpHeader[];
  readonly hash: Hash | undefined;
  /** JSON path of this resource in the original document, for error messages. */
  readonly at: string;
  /**
   * The bytes of a `data:` source, decoded once while the config was checked
   * (a data URL can carry hundreds of megabytes; fetching reuses these).
   */
  readonly inline?: Buffer;
}

interface EntryBase {
  /** Absolute config path: `/a/b` or, on Windows, a drive path `C:/a/b`; always normalised. */
  readonly path: string;
  /** Whether a pre-existing node at `path` is removed first. */
  readonly overwrite: boolean;
  /** JSON path of this entry in the original document. */
  readonly at: string;
}

/** A regular file. */
export interface FileEntry extends EntryBase {
  readonly kind: "file";
  readonly contents: Resource | undefined;
  readonly append: readonly Resource[];
  /** Permission bits; undefined means the spec's default (0644, or the existing file's mode when it is kept). */
  readonly mode: number | undefined;
}

/** A directory. */
export interface DirectoryEntry extends EntryBase {
  readonly kind: "directory";
  /** Permission bits; undefined means 0755, or the existing directory's mode. */
  readonly mode: number | undefined;
}

/** A symbolic or hard link. */
export interface LinkEntry extends EntryBase {
  readonly kind: "link";
  readonly target: string;
  readonly hard: boolean;
}

/** Any node a config lays down. */
export type Entry = FileEntry | DirectoryEntry | LinkEntry;

/** A section of the config that is valid but has no meaning on a Windows host. */
export interface NotApplicable {
  readonly path: string;
  readonly reason: string;
}

/** A parsed, validated, normalised Ignition config. */
export interface IgnitionConfig {
  /** The `ignition.version` string as written. */
  readonly version: string;
  readonly specLine: "2.2" | "3";
  readonly files: readonly FileEntry[];
  readonly directories: readonly DirectoryEntry[];
  readonly links: readonly LinkEntry[];
  readonly notApplicable: readonly NotApplicable[];
}
