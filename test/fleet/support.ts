/**
 * Running `winfleet local` in tests: a fleet manager as a real process (its
 * own process group, so nothing can outlive the test), its state directory and
 * stack file in a temporary directory, and a check that no agent is left.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { exitOf, signalGroup } from "../support";

export const REPO = join(__dirname, "..", "..");
const WINFLEET = join(REPO, "bin", "winfleet.js");

/** A stack file with one local pool. */
export function writeStack(
  file: string,
  o: {
    content: string;
    template: string;
    version: string;
    hosts: number;
    maxUnavailable?: number;
    /** The pool's drain knobs, as a flow mapping. */
    drain?: string;
  },
): void {
  writeFileSync(
    file,
    [
      "config:",
      "  winfleet:fleet:",
      "    content:",
      `      dir: ${o.content}`,
      `      template: ${o.template}`,
      `      templateVersion: "${o.version}"`,
      "    pools:",
      "      - name: local",
      "        kind: local",
      `        hosts: ${o.hosts}`,
      `        maxUnavailable: ${o.maxUnavailable ?? 1}`,
      ...(o.drain ? [`        drain: ${o.drain}`] : []),
      "",
    ].join("\n"),
  );
}

/** A running `winfleet local up`. */
export interface Fleet {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves once the output matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  readonly exit: Promise<number | null>;
}

/** Starts `winfleet local up` with `args`. */
export function startFleet(args: readonly string[]): Fleet {
  const child = spawn(process.execPath, [WINFLEET, "local", "up", ...args], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  const waiters = new Set<() => void>();
  const append = (c: Buffer): void => {
    out += c.toString();
    for (const w of waiters) w();
  };
  child.stdout?.on("data", append);
  child.stderr?.on("data", append);
  const exit = exitOf(child);
  return {
    child,
    output: () => out,
    exit,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (!pattern.test(out)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${String(pattern)} within ${timeoutMs} ms in:\n${out.slice(-3000)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
        void exit.then(() =>
          setTimeout(() => {
            if (waiters.has(check)) {
              waiters.delete(check);
              clearTimeout(timer);
              reject(new Error(`the fleet exited before ${String(pattern)}:\n${out.slice(-3000)}`));
            }
          }, 100),
        );
      }),
  };
}

/** Runs `winfleet <args>` to completion. */
export function winfleet(args: readonly string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [WINFLEET, ...args], { cwd: REPO, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Processes whose command line mentions `needle` (agents of this test's state directory). */
export function processesMentioning(needle: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (cmd.includes(needle) && !/\) Z /.test(stat)) out.push(`${pid} ${cmd}`);
    } catch {
      // gone
    }
  }
  return out;
}

/** Kills a fleet's whole process group (test cleanup). */
export function killFleet(f: Fleet | undefined): void {
  if (f) signalGroup(f.child, "SIGKILL");
}

/** The port the fleet printed. */
export function portOf(f: Fleet): number {
  const m = /status page: http:\/\/127\.0\.0\.1:(\d+)\//.exec(f.output());
  if (!m) throw new Error(`no status page line in:\n${f.output()}`);
  return Number(m[1]);
}

export { existsSync };
