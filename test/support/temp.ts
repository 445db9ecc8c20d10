/**
 * Temporary directories for tests: made under the system's temporary directory,
 * real-path resolved (so paths compare equal to what the code under test sees
 * after resolving links), and removed after the test file when asked.
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

/** A fresh temporary directory, kept (the caller removes it, or leaves it to look at). */
export function tempDir(prefix: string): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/** A fresh temporary directory removed, with everything in it, after the file's tests. */
export function scratchDir(prefix: string): string {
  const dir = tempDir(prefix);
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
