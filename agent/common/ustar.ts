/**
 * A deterministic gzipped POSIX ustar writer: entries in the order given,
 * owner 0, time 0 unless given, so the same entries always give the same bytes
 * (what content bundles pin by SHA-256). Windows' own `tar.exe` (bsdtar) and
 * GNU tar read it.
 */
import { gzipSync } from "node:zlib";

/** One archive member. */
export interface TarEntry {
  /** Relative, `/`-separated. */
  readonly path: string;
  /** Absent for a directory. */
  readonly data?: Buffer;
  /** @default 0o644 for files, 0o755 for directories */
  readonly mode?: number;
  /** Modification time in seconds since the epoch. @default 0 */
  readonly mtime?: number;
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

/** Splits a path into ustar's prefix (≤155 bytes) and name (≤100 bytes). */
function splitPath(path: string): { prefix: string; name: string } {
  if (Buffer.byteLength(path) <= 100) return { prefix: "", name: path };
  for (let i = path.lastIndexOf("/"); i > 0; i = path.lastIndexOf("/", i - 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100) return { prefix, name };
  }
  throw new Error(`${path} is too long for a ustar archive (100-byte name, 155-byte prefix)`);
}

function header(path: string, size: number, mode: number, dir: boolean, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const { prefix, name } = splitPath(dir ? `${path}/` : path);
  h.write(name, 0, 100, "utf8");
  h.write(octal(mode, 8), 100, "ascii");
  h.write(octal(0, 8), 108, "ascii"); // uid
  h.write(octal(0, 8), 116, "ascii"); // gid
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(Math.max(0, Math.trunc(mtime)), 12), 136, "ascii");
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

/** The uncompressed ustar stream of `entries`. */
export function ustar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (!e.data) {
      parts.push(header(e.path, 0, e.mode ?? 0o755, true, e.mtime ?? 0));
      continue;
    }
    parts.push(
      header(e.path, e.data.length, e.mode ?? 0o644, false, e.mtime ?? 0),
      e.data,
      Buffer.alloc((BLOCK - (e.data.length % BLOCK)) % BLOCK),
    );
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

/**
 * `entries` as a `.tar.gz`; gzip's header carries no name and time 0 from zlib, so the bytes depend on the entries
 * only.
 */
export function tarGz(entries: readonly TarEntry[]): Buffer {
  return gzipSync(ustar(entries), { level: 9 });
}
