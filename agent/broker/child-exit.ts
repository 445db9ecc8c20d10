/**
 * When a host program has ended, and with what exit code a client sees.
 */
import type { ChildProcess } from "node:child_process";
import { constants } from "node:os";
import type { Readable } from "node:stream";

/** How long output may still arrive after the program exited, from pipes its own children hold open. */
export const EXIT_GRACE_MS = 2000;

/**
 * The exit code a client sees: the code, or 128 + the signal number when killed.
 * A Windows exit code is a 32-bit value (0xC0000005 for an access violation, -1
 * as 0xFFFFFFFF), which Node reports unsigned; the protocol's int32 carries it
 * as the same 32 bits, signed.
 */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code | 0;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}

/**
 * Resolves with `child`'s exit code once it has ended and its output is read.
 * What the program wrote is read before "close"; but a child of its own that
 * was handed its output (cmd's `start /b`, or one taskkill could not end) keeps
 * the pipes open for as long as it lives. So it also resolves once the program
 * has exited and its output, flowing, has been quiet for {@link EXIT_GRACE_MS}
 * (then the pipes are let go): output held back for a slow reader is never cut short.
 */
export function exitOf(child: ChildProcess, graceMs = EXIT_GRACE_MS): Promise<number> {
  return new Promise<number>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer);
      resolve(exitCodeOf(code, signal));
    };
    child.once("close", done);
    let lastData = Date.now();
    const streams = [child.stdout, child.stderr].filter((st): st is Readable => st !== null);
    for (const st of streams) st.on("data", () => (lastData = Date.now()));
    child.once("exit", (code, signal) => {
      const check = (): void => {
        const quiet = Date.now() - lastData;
        if (streams.some((st) => st.isPaused()) || quiet < graceMs) {
          timer = setTimeout(check, Math.max(100, graceMs - quiet));
          return;
        }
        for (const st of streams) st.destroy();
        done(code, signal);
      };
      timer = setTimeout(check, graceMs);
    });
  });
}
