/**
 * Durable small files for the report queue, synchronously: the lifecycle
 * observer must not wait, yet a report it accepted must survive a crash. Each
 * write goes to a temporary file, is flushed, renamed over the target, and the
 * directory flushed, so a file is either the old one or the new one.
 */
import { closeSync, constants, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";

const WRITE = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | (constants.O_NOFOLLOW ?? 0);

/** Writes `value` as JSON to `path`, durably and atomically. */
export function writeJsonSync(path: string, value: unknown): void {
  const temp = `${path}.${process.pid}.tmp`;
  // A link planted at the temp name is not followed.
  const fd = openSync(temp, WRITE, 0o600);
  try {
    writeSync(fd, `${JSON.stringify(value)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  syncDir(dirname(path));
}

/** Removes `path` (gone already is fine), durably. */
export function removeSync(path: string): void {
  rmSync(path, { force: true });
  syncDir(dirname(path));
}

function syncDir(dir: string): void {
  // Windows cannot open a directory for fsync; its rename is durable enough there.
  if (process.platform === "win32") return;
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
