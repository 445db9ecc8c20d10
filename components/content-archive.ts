/**
 * A directory as a deterministic `.tar.gz` (POSIX ustar, entries sorted, owner
 * 0, time 0, modes 0644/0755), so the same content always gives the same bytes
 * and so the same SHA-256 — the value a node's bootstrap pins. Windows' own
 * `tar.exe` (bsdtar) reads it.
 */
import { createHash } from "node:crypto";
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

/** An archive and its digest. */
export interface Archive {
  readonly data: Buffer;
  readonly sha256: string;
}

const BLOCK = 512;

async function walk(root: string, rel = ""): Promise<{ rel: string; abs: string; dir: boolean }[]> {
  const out: { rel: string; abs: string; dir: boolean }[] = [];
  for (const name of (await readdir(join(root, rel))).sort()) {
    const r = rel === "" ? name : `${rel}/${name}`;
    const abs = join(root, r);
    const s = await stat(abs);
    if (s.isDirectory()) out.push({ rel: r, abs, dir: true }, ...(await walk(root, r)));
    else if (s.isFile()) out.push({ rel: r, abs, dir: false });
  }
  return out;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

/** Splits a path into ustar's prefix (≤155) and name (≤100). */
function splitPath(path: string): { prefix: string; name: string } {
  if (Buffer.byteLength(path) <= 100) return { prefix: "", name: path };
  for (let i = path.lastIndexOf("/"); i > 0; i = path.lastIndexOf("/", i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100) return { prefix, name };
  }
  throw new Error(`${path} is too long for a ustar archive (100-byte name, 155-byte prefix)`);
}

function header(path: string, size: number, mode: number, dir: boolean): Buffer {
  const h = Buffer.alloc(BLOCK);
  const { prefix, name } = splitPath(dir ? `${path}/` : path);
  h.write(name, 0, 100, "utf8");
  h.write(octal(mode, 8), 100, "ascii");
  h.write(octal(0, 8), 108, "ascii"); // uid
  h.write(octal(0, 8), 116, "ascii"); // gid
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(0, 12), 136, "ascii"); // mtime
  h.write("        ", 148, "ascii"); // checksum placeholder
  h.write(dir ? "5" : "0", 156, "ascii");
  h.write("ustar\0", 257, "ascii");
  h.write("00", 263, "ascii");
  h.write(prefix, 345, 155, "utf8");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return h;
}

/** Archives every directory and regular file below `root`. */
export async function archiveDirectory(root: string): Promise<Archive> {
  const parts: Buffer[] = [];
  for (const e of await walk(root)) {
    if (e.dir) {
      parts.push(header(e.rel, 0, 0o755, true));
      continue;
    }
    const data = await readFile(e.abs);
    const executable = ((await stat(e.abs)).mode & 0o111) !== 0;
    parts.push(header(e.rel, data.length, executable ? 0o755 : 0o644, false), data, Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  // gzip's header carries no name and time 0 from zlib, so the bytes depend on the content only.
  const data = gzipSync(Buffer.concat(parts), { level: 9 });
  return { data, sha256: createHash("sha256").update(data).digest("hex") };
}
