/**
 * Spec 2.2.0: validation as the spec2x line does it, and normalisation into the
 * internal model with 2.x's own defaults made explicit: files overwrite unless they
 * append, unset file modes are 0 (the 2.x executor's behaviour), every path lives
 * on the `root` filesystem, and repeated append entries for one path become one
 * file with several fragments.
 */
import type { ConfigV2 } from "./schema-v2";
import type { IssueList } from "./checks";
import { BUNDLE_SCHEME, checkDropinName, checkHash, checkMode, checkPath, checkSource, checkUnitName } from "./checks";
import { checkEntryGraph } from "./graph-checks";
import type { DirectoryEntry, Entry, FileEntry, IgnitionConfig, LinkEntry, NotApplicable, Resource } from "./model";

const SCHEMES_V2 = ["http", "https", "tftp", "s3", "data", BUNDLE_SCHEME];
/** 2.x applies no default to an unset file mode. */
const V2_FILE_MODE_UNSET = 0;
const V2_DIRECTORY_MODE_UNSET = 0o755;

/** Options for 2.2 parsing. */
export interface V2Options {
  /**
   * Accept `"filesystem": ""` as the root filesystem (what the 2019 prototype's content does), reporting the repair.
   */
  readonly lenient: boolean;
}

/** Validates `doc` into `issues` and returns the model (meaningful only without errors). */
export function normalizeV2(doc: ConfigV2, issues: IssueList, options: V2Options): IgnitionConfig {
  const storage = doc.storage ?? {};
  const filesystem = (name: string | null | undefined, at: string): boolean => {
    if (name === "root") return true;
    if (name === "" && options.lenient) {
      issues.warn(at, 'repaired: empty filesystem taken as "root"');
      return true;
    }
    if (name === undefined || name === null || name === "") issues.error(at, "no filesystem specified");
    else issues.error(at, `filesystem "${name}" is not supported on Windows: only "root" is`);
    return false;
  };

  const files: FileEntry[] = [];
  const byPath = new Map<string, number>();
  (storage.files ?? []).forEach((f, i) => {
    const at = `storage.files[${i}]`;
    const raw = f ?? {};
    const onRoot = filesystem(raw.filesystem, `${at}.filesystem`);
    const path = checkPath(raw.path, `${at}.path`, issues);
    checkMode(raw.mode, `${at}.mode`, issues, true);
    checkOwnerV2(raw.user, `${at}.user`, issues);
    checkOwnerV2(raw.group, `${at}.group`, issues);
    const append = raw.append ?? false;
    if (append && raw.overwrite === true)
      issues.error(`${at}.overwrite`, "cannot set both append and overwrite to true");
    const contents = resourceV2(raw.contents ?? {}, `${at}.contents`, issues, !append);
    if (path === "/") issues.error(`${at}.path`, "a file cannot replace the root directory");
    if (!onRoot || path === undefined) return;
    const mode = raw.mode ?? undefined;
    const existing = byPath.get(path);
    if (existing !== undefined && append) {
      const prev = files[existing];
      if (prev) files[existing] = { ...prev, append: [...prev.append, contents], mode: mode ?? prev.mode };
      return;
    }
    byPath.set(path, files.length);
    files.push(
      append
        ? {
            kind: "file",
            path,
            overwrite: false,
            contents: undefined,
            append: [contents],
            mode: mode ?? V2_FILE_MODE_UNSET,
            at,
          }
        : {
            kind: "file",
            path,
            overwrite: raw.overwrite ?? true,
            contents,
            append: [],
            mode: mode ?? V2_FILE_MODE_UNSET,
            at,
          },
    );
  });

  const directories: DirectoryEntry[] = [];
  (storage.directories ?? []).forEach((d, i) => {
    const at = `storage.directories[${i}]`;
    const raw = d ?? {};
    const onRoot = filesystem(raw.filesystem, `${at}.filesystem`);
    const path = checkPath(raw.path, `${at}.path`, issues);
    checkMode(raw.mode, `${at}.mode`, issues, true);
    checkOwnerV2(raw.user, `${at}.user`, issues);
    if (onRoot && path !== undefined) {
      directories.push({
        kind: "directory",
        path,
        overwrite: raw.overwrite ?? false,
        mode: raw.mode ?? V2_DIRECTORY_MODE_UNSET,
        at,
      });
    }
  });

  const links: LinkEntry[] = [];
  (storage.links ?? []).forEach((l, i) => {
    const at = `storage.links[${i}]`;
    const raw = l ?? {};
    const onRoot = filesystem(raw.filesystem, `${at}.filesystem`);
    const path = checkPath(raw.path, `${at}.path`, issues);
    checkOwnerV2(raw.user, `${at}.user`, issues);
    if (!raw.target) issues.error(`${at}.target`, "link target is required");
    else if (raw.target.includes("\0")) issues.error(`${at}.target`, "link target contains a NUL character");
    else if (path === "/") issues.error(`${at}.path`, "a link cannot replace the root directory");
    else if (onRoot && path !== undefined) {
      links.push({
        kind: "link",
        path,
        target: raw.target,
        hard: raw.hard ?? false,
        overwrite: raw.overwrite ?? false,
        at,
      });
    }
  });

  checkEntryGraph([...files, ...directories, ...links] as Entry[], issues);
  return { version: "2.2.0", specLine: "2.2", files, directories, links, notApplicable: otherSectionsV2(doc, issues) };
}

function checkOwnerV2(
  owner: { id?: number | null; name?: string | null } | null | undefined,
  at: string,
  issues: IssueList,
): void {
  if (owner && owner.id !== undefined && owner.id !== null && owner.name)
    issues.error(at, "cannot set both id and name");
}

// A 2.x file without a source is written empty (and, like any 2.x write, refused
// over an existing node when overwrite is false), so the model gets an explicit
// empty source rather than 3.x's "keep what is there".
function resourceV2(
  raw: { compression?: string | null; source?: string | null; verification?: { hash?: string | null } | null },
  at: string,
  issues: IssueList,
  emptyWhenUnset: boolean,
): Resource {
  const given = raw.source ?? undefined;
  const inline = given === undefined ? undefined : checkSource(given, `${at}.source`, issues, SCHEMES_V2);
  const compression = raw.compression ?? "";
  if (compression !== "" && compression !== "gzip") issues.error(`${at}.compression`, "invalid compression method");
  const spec = raw.verification?.hash;
  const hash = spec ? checkHash(spec, `${at}.verification.hash`, issues, ["sha512"]) : undefined;
  const source = given ?? (emptyWhenUnset ? "data:," : undefined);
  return {
    source,
    compression: compression === "gzip" ? "gzip" : undefined,
    httpHeaders: [],
    hash,
    at,
    ...(inline ? { inline } : {}),
  };
}

function otherSectionsV2(doc: ConfigV2, issues: IssueList): NotApplicable[] {
  const out: NotApplicable[] = [];
  const note = (present: unknown[] | null | undefined, path: string, reason: string): void => {
    if (present && present.length > 0) out.push({ path, reason });
  };
  (doc.systemd?.units ?? []).forEach((u, i) => {
    checkUnitName(u?.name, `systemd.units[${i}].name`, issues);
    (u?.dropins ?? []).forEach((d, j) => checkDropinName(d?.name, `systemd.units[${i}].dropins[${j}].name`, issues));
  });
  note(doc.systemd?.units, "systemd.units", "systemd does not exist on Windows; use a component's install commands");
  note(doc.networkd?.units, "networkd.units", "networkd does not exist on Windows");
  note(doc.passwd?.users, "passwd.users", "local accounts are managed by component commands on Windows");
  note(doc.passwd?.groups, "passwd.groups", "local groups are managed by component commands on Windows");
  note(doc.storage?.disks, "storage.disks", "disk partitioning is not done by the agent on Windows");
  note(doc.storage?.raid, "storage.raid", "software RAID does not apply on Windows");
  note(doc.storage?.filesystems, "storage.filesystems", "only the root filesystem exists for the agent on Windows");
  note(
    doc.ignition?.config?.append,
    "ignition.config.append",
    "child configs are composed at build time, not fetched by the agent",
  );
  return out;
}
