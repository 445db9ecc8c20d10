/**
 * Diagnose test helpers: an agent config for a root, and an archive read back
 * with the system's tar (as an operator would), entry by entry.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { gunzipSync } from "node:zlib";
import { tempDir } from "../support";

/** Writes an agent config (JSON) beside an agent.log and returns its path. */
export function writeAgentConfig(dir: string, config: Record<string, unknown>, agentLog = ""): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "agent.json");
  writeFileSync(file, JSON.stringify(config, null, 2));
  if (agentLog) writeFileSync(join(dir, "agent.log"), agentLog);
  return file;
}

/** An archive unpacked: each entry's bytes by path, the manifest parsed, and the raw tar stream. */
export interface Unpacked {
  readonly files: Map<string, Buffer>;
  readonly manifest: Manifest;
  readonly tar: Buffer;
}

/** The manifest as the tests read it. */
export interface Manifest {
  entries: { path: string; collector: string; source: string; size: number; sha256: string }[];
  missing: { path: string; collector: string; source: string; reason: string }[];
  collectors: { collector: string; outcome: string; ms: number }[];
}

/** Unpacks `archive` with tar into a fresh directory and reads every file. */
export function unpack(archive: string): Unpacked {
  const dir = tempDir("diagnose-unpacked-");
  execFileSync("tar", ["-xzf", archive, "-C", dir]);
  const files = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else files.set(relative(dir, full), readFileSync(full));
    }
  };
  walk(dir);
  return {
    files,
    manifest: JSON.parse(files.get("manifest.json")?.toString() ?? "{}") as Manifest,
    tar: gunzipSync(readFileSync(archive)),
  };
}

/** An entry parsed as JSON. */
export function entryJson<T>(u: Unpacked, path: string): T {
  const data = u.files.get(path);
  if (!data) throw new Error(`${path} is not in the archive (has: ${[...u.files.keys()].join(", ")})`);
  return JSON.parse(data.toString()) as T;
}
