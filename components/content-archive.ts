/**
 * A directory as a deterministic `.tar.gz` (POSIX ustar, entries sorted, owner
 * 0, time 0, modes 0644/0755), so the same content always gives the same bytes
 * and so the same SHA-256 — the value a node's bootstrap pins. Windows' own
 * `tar.exe` (bsdtar) reads it.
 */
import { createHash } from "node:crypto";
import { readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { type TarEntry, tarGz } from "../agent/common";

/** An archive and its digest. */
export interface Archive {
  readonly data: Buffer;
  readonly sha256: string;
}

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

/** Archives every directory and regular file below `root`. */
export async function archiveDirectory(root: string): Promise<Archive> {
  const entries: TarEntry[] = [];
  for (const e of await walk(root)) {
    if (e.dir) {
      entries.push({ path: e.rel });
      continue;
    }
    const executable = ((await stat(e.abs)).mode & 0o111) !== 0;
    entries.push({ path: e.rel, data: await readFile(e.abs), mode: executable ? 0o755 : 0o644 });
  }
  const data = tarGz(entries);
  return { data, sha256: createHash("sha256").update(data).digest("hex") };
}
