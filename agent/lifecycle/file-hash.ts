/**
 * SHA-512 of many files at once on every core, with as little copying and
 * allocation as the platform allows. A lane hashes one file at a time into a
 * buffer it keeps:
 * - a JS lane reads in chunks and hashes with `createHash` on the JS thread,
 *   one chunk per turn of the event loop, so nothing waits long behind it;
 * - each pool lane reads a whole file (up to {@link WHOLE_FILE_LIMIT}) and
 *   hands it to WebCrypto, which digests in libuv's thread pool.
 * Node copies what WebCrypto digests, so the pool lanes cost more CPU per byte
 * than the JS lanes; they pay off only where a core is otherwise idle, hence
 * one pool lane for each core beyond the first. Reads go through the pool
 * (asynchronous, never blocking the JS thread on a slow disk) into the lane's
 * buffer: no buffer per file for the collector to chase. Opening and closing
 * are synchronous, as the lstat of a path's parents is: a trip through the
 * pool costs two thread switches, more than these calls on a cached inode.
 */
import { createHash, webcrypto } from "node:crypto";
import { closeSync, openSync, read } from "node:fs";
import { availableParallelism } from "node:os";

/** Files up to this size are read whole by a pool lane; larger ones are hashed in chunks on the JS thread. */
export const WHOLE_FILE_LIMIT = 8 * 1024 * 1024;
/** A JS-lane read: large enough that a syscall is cheap beside the hashing, small enough to keep the loop turning. */
const CHUNK = 1024 * 1024;

function readInto(fd: number, buf: Buffer, offset: number, length: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, buf, offset, length, null, (e, n) => (e ? reject(e) : resolve(n))));
}

/** One file's SHA-512 (hex) at a time, into a buffer the lane keeps. */
export interface HashLane {
  /** `size` is the file's size from its lstat: reading stops there, as `readFile` stops at its fstat's. */
  sha512(path: string, size: number): Promise<string>;
}

/** Hashes on the JS thread: chunked reads into one buffer, each chunk fed to `createHash`. */
export function jsLane(): HashLane {
  let buf: Buffer | undefined;
  return {
    async sha512(path, size) {
      buf ??= Buffer.allocUnsafeSlow(CHUNK);
      const hash = createHash("sha512");
      const fd = openSync(path, "r");
      try {
        for (let got = 0; got < size;) {
          const n = await readInto(fd, buf, 0, Math.min(buf.length, size - got));
          if (n === 0) break; // shrunk since its lstat: the digest differs, and the file shows as changed
          hash.update(n === buf.length ? buf : buf.subarray(0, n));
          got += n;
        }
      } finally {
        closeSync(fd);
      }
      return hash.digest("hex");
    },
  };
}

/** Hashes in libuv's thread pool: the whole file read into the lane's buffer, then WebCrypto's digest. */
export function poolLane(large: HashLane = jsLane()): HashLane {
  let buf: Buffer | undefined;
  return {
    async sha512(path, size) {
      if (size > WHOLE_FILE_LIMIT) return large.sha512(path, size);
      if (!buf || buf.length < size) buf = Buffer.allocUnsafeSlow(Math.max(size, CHUNK));
      const fd = openSync(path, "r");
      let got = 0;
      try {
        while (got < size) {
          const n = await readInto(fd, buf, got, size - got);
          if (n === 0) break;
          got += n;
        }
      } finally {
        closeSync(fd);
      }
      return Buffer.from(await webcrypto.subtle.digest("SHA-512", buf.subarray(0, got))).toString("hex");
    },
  };
}

/**
 * The lanes for a machine of `cores`: two on the JS thread, so it hashes one
 * file's chunk while the other's read is under way, and one in the pool for
 * each further core.
 */
export function hashLanes(cores: number = availableParallelism()): HashLane[] {
  return [jsLane(), jsLane(), ...Array.from({ length: Math.max(0, cores - 1) }, () => poolLane())];
}
