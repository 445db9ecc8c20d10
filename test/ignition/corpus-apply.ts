/**
 * Generates spec-3.x configs for the differential apply test: files (both data
 * URL encodings, gzip, sha512/sha256 hashes, append fragments, modes, overwrite),
 * directories, symbolic and hard links, nested parents, and sometimes nodes that
 * already exist on the host, so overwrite rules are exercised too.
 */
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { percentEncode } from "../../agent/ignition/data-url";
import { Rng } from "../support";

/** A node placed on the host before the config is applied. */
export interface PreNode {
  readonly path: string;
  readonly type: "file" | "dir" | "symlink";
  readonly data?: Buffer;
  readonly mode?: number;
  readonly target?: string;
}

/** One differential case. */
export interface ApplyCase {
  readonly name: string;
  readonly config: Record<string, unknown>;
  readonly pre: readonly PreNode[];
}

const SEGMENTS = ["a", "b", "c", "opt", "srv", "data"];
const FILE_MODES = [undefined, 0o644, 0o600, 0o755, 0o640, 0o400, 0o777, 0o444];
const DIR_MODES = [undefined, 0o755, 0o700, 0o750, 0o777, 0o711];

/** Encodes bytes in one of the forms Ignition reads, returning the resource JSON. */
export function encodeResource(rng: Rng, data: Buffer, minor: number, allowGzip = true): Record<string, unknown> {
  const form = rng.pick(allowGzip ? ["pct", "b64", "gzip"] : ["pct", "b64"]);
  const out: Record<string, unknown> = {};
  if (form === "pct") out.source = `data:,${percentEncode(data)}`;
  else if (form === "b64")
    out.source = `data:${rng.pick(["", "text/plain", "application/octet-stream;charset=utf-8"])};base64,${data.toString("base64")}`;
  else {
    out.source = `data:;base64,${gzipSync(data).toString("base64")}`;
    out.compression = "gzip";
  }
  const roll = rng.next();
  if (roll < 0.3) out.verification = { hash: `sha512-${createHash("sha512").update(data).digest("hex")}` };
  else if (roll < 0.45 && minor >= 1)
    out.verification = { hash: `sha256-${createHash("sha256").update(data).digest("hex")}` };
  else if (roll < 0.46)
    out.verification = {
      hash: `sha512-${createHash("sha512")
        .update(Buffer.concat([data, Buffer.from("x")]))
        .digest("hex")}`,
    };
  return out;
}

function randomPath(rng: Rng): string {
  const depth = 1 + rng.int(3);
  return `/${Array.from({ length: depth }, () => rng.pick(SEGMENTS)).join("/")}`;
}

function content(rng: Rng): Buffer {
  const big = rng.chance(0.1);
  return rng.bytes(big ? 1000 + rng.int(4000) : rng.int(120), rng.chance(0.7));
}

/** `count` cases from `seed`. */
export function applyCorpus(seed: number, count: number): ApplyCase[] {
  const rng = new Rng(seed);
  return Array.from({ length: count }, (_, i) => oneCase(rng, i));
}

function oneCase(rng: Rng, index: number): ApplyCase {
  const minor = rng.int(4);
  const files: Record<string, unknown>[] = [];
  const directories: Record<string, unknown>[] = [];
  const links: Record<string, unknown>[] = [];
  const used: string[] = [];
  const linkPaths: string[] = [];
  const entries = 1 + rng.int(7);
  for (let n = 0; n < entries; n++) {
    const path = randomPath(rng);
    // Keep the config valid: unique paths, nothing below a link of its own.
    if (
      used.includes(path) ||
      linkPaths.some((l) => path.startsWith(`${l}/`)) ||
      used.some((u) => u.startsWith(`${path}/`) && rng.chance(0.9))
    )
      continue;
    const kind = rng.next();
    if (kind < 0.55) {
      const file: Record<string, unknown> = { path };
      if (rng.chance(0.8)) file.contents = encodeResource(rng, content(rng), minor);
      if (rng.chance(0.3))
        file.append = Array.from({ length: 1 + rng.int(2) }, () =>
          encodeResource(rng, rng.bytes(rng.int(40), true), minor, rng.chance(0.5)),
        );
      const mode = rng.pick(FILE_MODES);
      if (mode !== undefined) file.mode = mode;
      if (file.contents && rng.chance(0.4)) file.overwrite = true;
      else if (rng.chance(0.3)) file.overwrite = false;
      files.push(file);
    } else if (kind < 0.8) {
      const dir: Record<string, unknown> = { path };
      const mode = rng.pick(DIR_MODES);
      if (mode !== undefined) dir.mode = mode;
      if (rng.chance(0.2)) dir.overwrite = true;
      directories.push(dir);
    } else {
      if (used.some((u) => u.startsWith(`${path}/`))) continue;
      const fileTargets = files.map((f) => f.path as string);
      const hard = fileTargets.length > 0 && rng.chance(0.35);
      const target = hard ? rng.pick(fileTargets) : rng.pick([randomPath(rng), "../relative/x", "/nonexistent"]);
      const l: Record<string, unknown> = { path, target };
      if (hard) l.hard = true;
      if (rng.chance(0.3)) l.overwrite = true;
      links.push(l);
      linkPaths.push(path);
    }
    used.push(path);
  }
  const pre: PreNode[] = [];
  if (rng.chance(0.3) && used.length > 0) {
    for (let k = 0; k < 1 + rng.int(2); k++) {
      const at = rng.pick(used);
      if (pre.some((p) => p.path === at || at.startsWith(`${p.path}/`) || p.path.startsWith(`${at}/`))) continue;
      const t = rng.next();
      if (t < 0.5)
        pre.push({ path: at, type: "file", data: rng.bytes(rng.int(30), true), mode: rng.pick([0o644, 0o600, 0o755]) });
      else if (t < 0.8) pre.push({ path: at, type: "dir", mode: rng.pick([0o755, 0o700]) });
      else pre.push({ path: at, type: "symlink", target: rng.pick(["/elsewhere", "../up"]) });
    }
  }
  const storage: Record<string, unknown> = {};
  if (files.length) storage.files = files;
  if (directories.length) storage.directories = directories;
  if (links.length) storage.links = links;
  return { name: `apply-${index}`, config: { ignition: { version: `3.${minor}.0` }, storage }, pre };
}
