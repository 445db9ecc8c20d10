/**
 * Waiting in tests: every wait is bounded, so a test that goes wrong fails with
 * what it waited for instead of hanging the run.
 */
import { existsSync, readFileSync } from "node:fs";

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `check` every `intervalMs` until it holds or `timeoutMs` have passed;
 * resolves with whether it held (for a caller whose own assertion says what went wrong).
 */
export async function pollUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= end) return false;
    await sleep(intervalMs);
  }
}

/** Polls `check` until it holds; throws, naming `what`, after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
  intervalMs = 50,
): Promise<void> {
  if (!(await pollUntil(check, timeoutMs, intervalMs)))
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/**
 * Reads `file` until its text matches `pattern` (a missing file reads as empty); returns the text, or throws after
 * `timeoutMs`.
 */
export async function readUntil(file: string, pattern: RegExp, timeoutMs: number, intervalMs = 50): Promise<string> {
  let text = "";
  const read = (): boolean => {
    text = existsSync(file) ? readFileSync(file, "utf8") : "";
    return pattern.test(text);
  };
  if (!(await pollUntil(read, timeoutMs, intervalMs)))
    throw new Error(
      `timed out after ${timeoutMs} ms waiting for ${String(pattern)} in ${file}; it reads: ${JSON.stringify(text.slice(-500))}`,
    );
  return text;
}
