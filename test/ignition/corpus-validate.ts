/**
 * Generates valid and invalid configs for validation parity with
 * `ignition-validate`: a valid generated config, then (usually) one mutation
 * from a catalogue of the ways configs go wrong — paths, duplicates, links,
 * modes, data URLs, schemes, compression, hashes, headers, owners, other
 * sections, JSON types, versions and broken JSON. Some mutations leave the config
 * valid (unknown keys, sha256 in 3.1+), which is as much a check as rejection.
 */
import { applyCorpus } from "./corpus-apply";
import { Rng } from "../support";

/** One parity case: the config text exactly as both validators read it. */
export interface ValidateCase {
  readonly name: string;
  readonly mutation: string;
  readonly text: string;
}

type Doc = { ignition: { version: unknown }; storage: Record<string, unknown[] | undefined> } & Record<string, unknown>;
type Mutation = (doc: Doc, rng: Rng) => Doc | string;

const HEX64 = "a".repeat(64);
const HEX128 = "b".repeat(128);

function anyFile(doc: Doc): Record<string, unknown> {
  const files = (doc.storage.files ??= []) as Record<string, unknown>[];
  if (files.length === 0) files.push({ path: "/gen/file", contents: { source: "data:,x" } });
  return files[0] as Record<string, unknown>;
}

function withSource(doc: Doc, source: string, extra: Record<string, unknown> = {}): Doc {
  const f = anyFile(doc);
  f.contents = { source, ...extra };
  return doc;
}

const MUTATIONS: Record<string, Mutation> = {
  relativePath: (d) => {
    anyFile(d).path = "rel/path";
    return d;
  },
  dirtyPath: (d, r) => {
    anyFile(d).path = r.pick(["/a/../b", "/a/", "/a//b", "/./a"]);
    return d;
  },
  missingPath: (d) => {
    delete anyFile(d).path;
    return d;
  },
  duplicateAcrossKinds: (d) => {
    (d.storage.directories ??= []).push({ path: anyFile(d).path });
    return d;
  },
  duplicateFiles: (d) => {
    (d.storage.files ??= []).push({ ...anyFile(d) });
    return d;
  },
  belowLink: (d) => {
    anyFile(d).path = "/lnk/inner";
    (d.storage.links ??= []).push({ path: "/lnk", target: "/elsewhere" });
    return d;
  },
  hardLinkToDirectory: (d) => {
    (d.storage.directories ??= []).push({ path: "/hd" });
    (d.storage.links ??= []).push({ path: "/hl", target: "/hd", hard: true });
    return d;
  },
  overwriteWithoutSource: (d) => {
    (d.storage.files ??= []).push({ path: "/ow", overwrite: true });
    return d;
  },
  illegalMode: (d, r) => {
    anyFile(d).mode = r.pick([4096, -1, 99999]);
    return d;
  },
  specialBitsMode: (d) => {
    anyFile(d).mode = 0o4755;
    return d;
  },
  modeAsString: (d) => {
    anyFile(d).mode = "420";
    return d;
  },
  badDataUrl: (d, r) =>
    withSource(
      d,
      r.pick([
        "data:,a b",
        "data:;base64,@@@",
        "data:,%zz",
        "data:text,hi",
        "data:abc",
        "data:;base64,aGk",
        "data:,a{b",
        "DATA:,x",
      ]),
    ),
  goodDataUrl: (d, r) =>
    withSource(
      d,
      r.pick([
        "data:,",
        "data:text/plain,hi",
        "data:;charset=x,a",
        "data:text/plain;a=b;base64,aGk=",
        "data:,a~b!$&()*+,;=:@/?",
        "data:,a%20b",
      ]),
    ),
  badScheme: (d, r) => withSource(d, r.pick(["ftp://x/y", "file:///x", "/abs", "arn:aws:s3:::b/k"])),
  otherSchemes: (d, r) =>
    withSource(
      d,
      r.pick(["http://example.invalid/x", "https://example.invalid/x", "s3://b/k", "tftp://h/f", "gs://b/k"]),
    ),
  badCompression: (d) => withSource(d, "data:,x", { compression: "xz" }),
  gzipWithoutSource: (d) => {
    (d.storage.files ??= []).push({ path: "/gz", contents: { compression: "gzip" } });
    return d;
  },
  malformedHash: (d) => withSource(d, "data:,x", { verification: { hash: "sha512" } }),
  unknownHashFunction: (d) => withSource(d, "data:,x", { verification: { hash: "md5-00" } }),
  shortHash: (d) => withSource(d, "data:,x", { verification: { hash: "sha512-00" } }),
  sha256Hash: (d) => withSource(d, "data:,x", { verification: { hash: `sha256-${HEX64}` } }),
  hashWithoutSource: (d) => {
    (d.storage.files ??= []).push({ path: "/hs", contents: { verification: { hash: `sha512-${HEX128}` } } });
    return d;
  },
  headersOnData: (d) => withSource(d, "data:,x", { httpHeaders: [{ name: "a", value: "b" }] }),
  emptyHeaderName: (d) => withSource(d, "https://example.invalid/x", { httpHeaders: [{ name: "", value: "b" }] }),
  duplicateHeaders: (d) =>
    withSource(d, "https://example.invalid/x", { httpHeaders: [{ name: "a" }, { name: "a", value: "c" }] }),
  goodHeaders: (d) =>
    withSource(d, "https://example.invalid/x", { httpHeaders: [{ name: "Authorization", value: "Bearer t" }] }),
  ownerIdAndName: (d) => {
    anyFile(d).user = { id: 0, name: "root" };
    return d;
  },
  ownerOk: (d) => {
    anyFile(d).group = { name: "wheel" };
    return d;
  },
  badUnitName: (d) => {
    d.systemd = { units: [{ name: "foo" }] };
    return d;
  },
  badDropin: (d) => {
    d.systemd = { units: [{ name: "foo.service", dropins: [{ name: "x" }] }] };
    return d;
  },
  goodUnits: (d) => {
    d.systemd = {
      units: [{ name: "foo.service", enabled: true, contents: "[Unit]\n", dropins: [{ name: "x.conf" }] }],
    };
    return d;
  },
  filesystemWithoutDevice: (d) => {
    d.storage.filesystems = [{ path: "/x" }];
    return d;
  },
  goodFilesystem: (d) => {
    d.storage.filesystems = [{ device: "/dev/sdb1", format: "ext4", path: "/var" }];
    return d;
  },
  users: (d) => {
    d.passwd = { users: [{ name: "core", sshAuthorizedKeys: ["ssh-ed25519 AAAA"] }], groups: [{ name: "g" }] };
    return d;
  },
  kernelArguments: (d) => {
    d.kernelArguments = { shouldExist: ["quiet"] };
    return d;
  },
  unknownKeys: (d) => {
    d.extra = 1;
    anyFile(d).colour = "blue";
    return d;
  },
  nullEntry: (d) => {
    (d.storage.files ??= []).push(null);
    return d;
  },
  nullSection: (d) => {
    (d as Record<string, unknown>).storage = null;
    return d;
  },
  overwriteAsString: (d) => {
    anyFile(d).overwrite = "yes";
    return d;
  },
  filesAsObject: (d) => {
    (d.storage as Record<string, unknown>).files = {};
    return d;
  },
  storageAsArray: (d) => {
    (d as Record<string, unknown>).storage = [];
    return d;
  },
  appendAsObject: (d) => {
    anyFile(d).append = {};
    return d;
  },
  unsupportedVersion: (d, r) => {
    d.ignition.version = r.pick(["3.5.0", "3.0.0-experimental", "4.0.0", "1.0.0", "3.1"]);
    return d;
  },
  versionNotString: (d, r) => {
    d.ignition.version = r.pick([3, null, ""]);
    return d;
  },
  brokenJson: (d) => JSON.stringify(d).slice(0, -2),
  notAnObject: (_d, r) => r.pick(["[]", "null", "42", '"x"']),
};

/** `count` cases; every mutation appears at least once when `count` allows. */
export function validateCorpus(seed: number, count: number): ValidateCase[] {
  const rng = new Rng(seed);
  const bases = applyCorpus(seed + 1, count);
  const names = Object.keys(MUTATIONS);
  return bases.map((base, i) => {
    const doc = structuredClone(base.config) as Doc;
    doc.storage ??= {};
    const name = i < names.length ? names[i] : rng.chance(0.2) ? undefined : rng.pick(names);
    if (name === undefined) return { name: `validate-${i}`, mutation: "none", text: JSON.stringify(doc) };
    const mutation = MUTATIONS[name];
    if (mutation === undefined) throw new Error(`no mutation ${name}`);
    const mutated = mutation(doc, rng);
    return {
      name: `validate-${i}`,
      mutation: name,
      text: typeof mutated === "string" ? mutated : JSON.stringify(mutated),
    };
  });
}
