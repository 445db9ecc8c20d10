/**
 * Spec 3.x: semantic validation (as Ignition's Go validators do it) and
 * normalisation of a type-checked document into the internal model.
 */
import type { ConfigV3 } from "./schema-v3";
import type { IssueList } from "./checks";
import {
  BUNDLE_SCHEME,
  checkDropinName,
  checkHash,
  checkMode,
  checkPath,
  checkSource,
  checkUnitName,
  urlScheme,
} from "./checks";
import type {
  DirectoryEntry,
  Entry,
  FileEntry,
  HttpHeader,
  IgnitionConfig,
  LinkEntry,
  NotApplicable,
  Resource,
} from "./model";
import { checkEntryGraph } from "./graph-checks";

type RawResource = NonNullable<NonNullable<NonNullable<ConfigV3["storage"]>["files"]>[number]>["contents"];
type Owner = { id?: number | null; name?: string | null } | null | undefined;

/** URL schemes by the spec minor that introduced them (gs: 3.2, arn: 3.4); bundle is ours. */
function schemesFor(minor: number): string[] {
  return [
    "http",
    "https",
    "tftp",
    "s3",
    "data",
    BUNDLE_SCHEME,
    ...(minor >= 2 ? ["gs"] : []),
    ...(minor >= 4 ? ["arn"] : []),
  ];
}

/** Validates `doc` (spec 3.`minor`) into `issues` and returns the model (meaningful only without errors). */
export function normalizeV3(doc: ConfigV3, version: string, minor: number, issues: IssueList): IgnitionConfig {
  const files: FileEntry[] = [];
  const directories: DirectoryEntry[] = [];
  const links: LinkEntry[] = [];
  const storage = doc.storage ?? {};
  const special = minor >= 4;

  (storage.files ?? []).forEach((f, i) => {
    const at = `storage.files[${i}]`;
    const raw = f ?? {};
    const path = checkPath(raw.path, `${at}.path`, issues);
    checkOwner(raw.user, `${at}.user`, issues);
    checkOwner(raw.group, `${at}.group`, issues);
    checkMode(raw.mode, `${at}.mode`, issues, special);
    const contents = raw.contents ? resource(raw.contents, `${at}.contents`, minor, issues) : undefined;
    const append = (raw.append ?? []).map((a, j) => resource(a ?? {}, `${at}.append[${j}]`, minor, issues));
    const overwrite = raw.overwrite ?? false;
    if (overwrite && contents?.source === undefined)
      issues.error(`${at}.overwrite`, "overwrite must be false if source is unspecified");
    if (path === "/") issues.error(`${at}.path`, "a file cannot replace the root directory");
    if (path !== undefined)
      files.push({ kind: "file", path, overwrite, contents, append, mode: raw.mode ?? undefined, at });
  });
  (storage.directories ?? []).forEach((d, i) => {
    const at = `storage.directories[${i}]`;
    const raw = d ?? {};
    const path = checkPath(raw.path, `${at}.path`, issues);
    checkOwner(raw.user, `${at}.user`, issues);
    checkOwner(raw.group, `${at}.group`, issues);
    checkMode(raw.mode, `${at}.mode`, issues, special);
    if (path !== undefined)
      directories.push({ kind: "directory", path, overwrite: raw.overwrite ?? false, mode: raw.mode ?? undefined, at });
  });
  (storage.links ?? []).forEach((l, i) => {
    const at = `storage.links[${i}]`;
    const raw = l ?? {};
    const path = checkPath(raw.path, `${at}.path`, issues);
    checkOwner(raw.user, `${at}.user`, issues);
    checkOwner(raw.group, `${at}.group`, issues);
    // Ignition 2.14 accepts a link without a target and then fails while applying it;
    // later releases reject it up front, as we do.
    if (raw.target === undefined || raw.target === null || raw.target === "")
      issues.error(`${at}.target`, "link target is required");
    else if (raw.target.includes("\0")) issues.error(`${at}.target`, "link target contains a NUL character");
    else if (path === "/") issues.error(`${at}.path`, "a link cannot replace the root directory");
    else if (path !== undefined)
      links.push({
        kind: "link",
        path,
        target: raw.target,
        hard: raw.hard ?? false,
        overwrite: raw.overwrite ?? false,
        at,
      });
  });
  checkEntryGraph([...files, ...directories, ...links] as Entry[], issues);
  return { version, specLine: "3", files, directories, links, notApplicable: otherSections(doc, minor, issues) };
}

function checkOwner(owner: Owner, at: string, issues: IssueList): void {
  if (
    owner &&
    owner.id !== undefined &&
    owner.id !== null &&
    owner.name !== undefined &&
    owner.name !== null &&
    owner.name !== ""
  ) {
    issues.error(at, "cannot set both id and name");
  }
}

function resource(raw: NonNullable<RawResource>, at: string, minor: number, issues: IssueList): Resource {
  const source = raw.source ?? undefined;
  const inline = source === undefined ? undefined : checkSource(source, `${at}.source`, issues, schemesFor(minor));
  const compression = raw.compression ?? "";
  if (compression !== "" && compression !== "gzip") issues.error(`${at}.compression`, "invalid compression method");
  const headers: HttpHeader[] = [];
  if (minor >= 1) {
    const seen = new Set<string>();
    (raw.httpHeaders ?? []).forEach((h, i) => {
      const name = h?.name ?? "";
      if (name === "") issues.error(`${at}.httpHeaders[${i}].name`, "HTTP header name can't be empty");
      else if (seen.has(name)) issues.error(`${at}.httpHeaders[${i}]`, "duplicate entry defined");
      seen.add(name);
      headers.push({ name, value: h?.value ?? undefined });
    });
    const scheme = source === undefined ? "" : urlScheme(source);
    if (headers.length > 0 && scheme !== "http" && scheme !== "https") {
      issues.error(`${at}.httpHeaders`, "cannot use HTTP headers with this source scheme");
    }
  }
  let hash: Resource["hash"];
  const spec = raw.verification?.hash;
  if (spec !== undefined && spec !== null) {
    if (source === undefined)
      issues.error(`${at}.verification.hash`, "source must be specified if verification is specified");
    hash = checkHash(spec, `${at}.verification.hash`, issues, minor >= 1 ? ["sha512", "sha256"] : ["sha512"]);
  }
  return {
    source,
    compression: compression === "gzip" ? "gzip" : undefined,
    httpHeaders: headers,
    hash,
    at,
    ...(inline ? { inline } : {}),
  };
}

/** Validates the sections a Windows host cannot apply and lists those present. */
function otherSections(doc: ConfigV3, minor: number, issues: IssueList): NotApplicable[] {
  const out: NotApplicable[] = [];
  const note = (present: unknown, path: string, reason: string): void => {
    if (Array.isArray(present) ? present.length > 0 : present !== undefined && present !== null)
      out.push({ path, reason });
  };
  const ign = doc.ignition ?? {};
  (ign.config?.merge ?? []).forEach((r, i) => resource(r ?? {}, `ignition.config.merge[${i}]`, minor, issues));
  if (ign.config?.replace) resource(ign.config.replace, "ignition.config.replace", minor, issues);
  (ign.security?.tls?.certificateAuthorities ?? []).forEach((r, i) =>
    resource(r ?? {}, `ignition.security.tls.certificateAuthorities[${i}]`, minor, issues),
  );
  note(
    ign.config?.merge,
    "ignition.config.merge",
    "child configs are composed at build time, not fetched by the agent",
  );
  note(
    ign.config?.replace,
    "ignition.config.replace",
    "child configs are composed at build time, not fetched by the agent",
  );
  note(ign.security?.tls?.certificateAuthorities, "ignition.security.tls", "Windows uses its own certificate store");
  note(ign.proxy, "ignition.proxy", "the agent uses the host's proxy settings");

  const storage = doc.storage ?? {};
  (storage.filesystems ?? []).forEach((f, i) => {
    const at = `storage.filesystems[${i}]`;
    if (!f?.device) issues.error(`${at}.device`, "path not specified");
    const needsFormat = Boolean(f?.path || f?.label || f?.uuid || f?.wipeFilesystem || (f?.options ?? []).length > 0);
    if (needsFormat && !f?.format)
      issues.error(
        `${at}.format`,
        "format cannot be empty when path, label, uuid, wipeFilesystem, options are specified",
      );
  });
  note(storage.disks, "storage.disks", "disk partitioning is not done by the agent on Windows");
  note(storage.raid, "storage.raid", "software RAID does not apply on Windows");
  note(storage.filesystems, "storage.filesystems", "filesystems are not created by the agent on Windows");
  note(storage.luks, "storage.luks", "LUKS does not apply on Windows");

  (doc.systemd?.units ?? []).forEach((u, i) => {
    checkUnitName(u?.name, `systemd.units[${i}].name`, issues);
    (u?.dropins ?? []).forEach((d, j) => checkDropinName(d?.name, `systemd.units[${i}].dropins[${j}].name`, issues));
  });
  note(doc.systemd?.units, "systemd.units", "systemd does not exist on Windows; use a component's install commands");
  note(doc.passwd?.users, "passwd.users", "local accounts are managed by component commands on Windows");
  note(doc.passwd?.groups, "passwd.groups", "local groups are managed by component commands on Windows");
  note(doc.kernelArguments, "kernelArguments", "kernel arguments do not apply on Windows");
  return out;
}
