/**
 * Running a diagnostic command: output captured up to a limit (the newest
 * bytes kept), killed — its whole process group off Windows, its tree on
 * Windows — when the collector's time is up.
 */
import { spawn } from "node:child_process";

/** How a command ended. */
export interface CommandResult {
  /** The exit code; null when it was killed or could not start. */
  readonly code: number | null;
  readonly stdout: Buffer;
  readonly stderr: string;
  /** Set when the program could not be started (not installed…). */
  readonly startError?: string;
}

/** Runs `argv[0]` with the rest as arguments. */
export type CommandRunner = (
  argv: readonly string[],
  signal: AbortSignal,
  options?: { maxBytes?: number },
) => Promise<CommandResult>;

const DEFAULT_MAX = 16 * 1024 * 1024;

/** The real runner. */
export const runCommand: CommandRunner = (argv, signal, options = {}) =>
  new Promise((resolve) => {
    const [file, ...args] = argv;
    const max = options.maxBytes ?? DEFAULT_MAX;
    if (!file) {
      resolve({ code: null, stdout: Buffer.alloc(0), stderr: "", startError: "no command" });
      return;
    }
    const child = spawn(file, args, {
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
      detached: process.platform !== "win32",
      env: { ...process.env, LC_ALL: "C" },
    });
    let out: Buffer[] = [];
    let outBytes = 0;
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out.push(c);
      outBytes += c.length;
      if (outBytes > max * 2) {
        const all = Buffer.concat(out);
        out = [all.subarray(all.length - max)];
        outBytes = max;
      }
    });
    child.stderr.on("data", (c: Buffer) => {
      err = (err + c.toString()).slice(-8192);
    });
    const kill = (): void => {
      if (child.pid === undefined) return;
      try {
        if (process.platform === "win32")
          spawn("taskkill.exe", ["/T", "/F", "/PID", String(child.pid)], { stdio: "ignore", windowsHide: true });
        else process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    signal.addEventListener("abort", kill, { once: true });
    child.once("error", (e) => {
      signal.removeEventListener("abort", kill);
      resolve({ code: null, stdout: Buffer.alloc(0), stderr: err, startError: e.message });
    });
    child.once("close", (code) => {
      signal.removeEventListener("abort", kill);
      const all = Buffer.concat(out);
      resolve({ code, stdout: all.length > max ? all.subarray(all.length - max) : all, stderr: err });
    });
  });
