/**
 * The control plane's processes: each started with its output in `<logDir>/<name>.log`, killed
 * with the process that started it, stopped with a grace period, and kept running the way a
 * kubelet keeps a static pod running.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Makes sure a test runner or CLI that dies without stopping its servers does not leave them behind. */
export function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}

/** Starts `binary` with its output appended to `<logDir>/<name>.log`. */
export function startProcess(name: string, binary: string, args: readonly string[], logDir: string): ChildProcess {
  const log = openSync(join(logDir, `${name}.log`), "a");
  const child = spawn(binary, args, { stdio: ["ignore", log, log] });
  closeSync(log);
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
export async function stopProcess(child: ChildProcess | undefined, graceMs = 10_000): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The last lines of a component's log, to put in an error. */
export function logTail(logDir: string, name: string): string {
  try {
    return readFileSync(join(logDir, `${name}.log`), "utf8")
      .split("\n")
      .slice(-15)
      .join("\n");
  } catch {
    return "(no log)";
  }
}

/**
 * One component of the control plane, kept running the way a kubelet keeps a static pod running: an exit nobody
 * asked for (a crash, a `kill -9`) starts it again with the same arguments, so on the same ports and data.
 */
export class Supervised {
  child: ChildProcess | undefined;
  /** How often it was started again after an exit nobody asked for. */
  restarts = 0;
  private wanted = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly name: string,
    private readonly binary: string,
    private readonly args: readonly string[],
    private readonly logDir: string,
    private readonly log: (line: string) => void,
  ) {}

  /** Starts the process; it is started again whenever it exits until {@link stop}. */
  start(): ChildProcess {
    this.wanted = true;
    const child = startProcess(this.name, this.binary, this.args, this.logDir);
    this.child = child;
    child.once("exit", (code, signal) => {
      if (!this.wanted || this.child !== child) return;
      this.restarts++;
      // A component that keeps dying is retried less often, as a kubelet backs off a crashing pod; bounded low,
      // since a throwaway cluster is worth nothing without it.
      const delay = Math.min(500 * 2 ** Math.min(this.restarts - 1, 4), 8000);
      this.log(`${this.name} exited (${signal ?? String(code)}); starting it again in ${delay / 1000} s`);
      this.timer = setTimeout(() => {
        if (this.wanted) this.start();
      }, delay);
    });
    return child;
  }

  /** Stops the process for good. */
  async stop(): Promise<void> {
    this.wanted = false;
    if (this.timer) clearTimeout(this.timer);
    await stopProcess(this.child);
  }
}
