/**
 * What the Wine tier's suites share. They run on Windows' own Node.js only:
 * `npm run test:wine` bundles each suite and runs it under Wine on Linux, or
 * natively in the Windows workflow (scripts/wine/run-tests.mjs), and hands
 * them the agent bundle, the broker's .proto files and the bundled programs
 * of this folder through the environment. Wine runs the Win32 API as Wine
 * implements it: where it is known to differ from Windows, a suite says so
 * with {@link wineDiffers} (a line in the report) and asserts what Windows
 * does only where it runs natively.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { killedAfterTests, scratchDir, waitFor } from "../support";

if (process.platform !== "win32")
  throw new Error("the suites under test/wine run on Windows' Node.js: npm run test:wine (under Wine on Linux)");

function fromRunner(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the suites with npm run test:wine`);
  return value;
}

/** The agent bundle's entry (`dist/agent/bin/winfleet-agent.js`, copied for the run). */
export const AGENT = fromRunner("WINFLEET_WINE_AGENT");
/** The broker's .proto files. */
export const PROTO_DIR = fromRunner("WINFLEET_WINE_PROTO");
/** The bundled programs of this folder (`<name>-program.ts` as `<name>-program.js`). */
export const PROGRAMS = fromRunner("WINFLEET_WINE_PROGRAMS");

/** Whether this is Wine rather than Windows (Wine's registry key). */
export const underWine: boolean =
  spawnSync("reg.exe", ["query", "HKLM\\Software\\Wine"], { stdio: "ignore", windowsHide: true }).status === 0;

/**
 * Notes, in the test's report, a known difference between Wine and Windows
 * that the test depends on, and what only Windows confirms. Under Wine the note
 * is printed; natively the test asserts the Windows behaviour itself.
 */
export function wineDiffers(t: TestContext, note: string): void {
  if (underWine) t.diagnostic(`Wine differs from Windows: ${note}`);
}

/** A directory on the system drive, removed after the file's tests. */
export function scratch(prefix: string): string {
  return scratchDir(`wf-${prefix}-`);
}

/** A pipe name no other run uses. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${process.pid}-${randomBytes(4).toString("hex")}`;
}

/** Whether `pid` runs (Windows' `GetExitCodeProcess` answers STILL_ACTIVE). */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until `pid` no longer runs. */
export async function gone(pid: number, what: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(() => !running(pid), timeoutMs, `${what} (pid ${pid}) to end`);
}

/** What a finished process printed. */
export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A process started by {@link start}: its output so far, and its end. */
export interface Started {
  readonly child: ChildProcess;
  output(): string;
  readonly done: Promise<Finished>;
}

const children = killedAfterTests();

/** Starts `node <file> ...args` (killed after the file's tests if still running), gathering its output. */
export function start(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Started {
  const child = spawn(process.execPath, [file, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    windowsHide: true,
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<Finished>((resolve) => {
    child.once("error", (e) => resolve({ code: null, stdout, stderr: `${stderr}${e.message}` }));
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { child, output: () => stdout + stderr, done };
}

/** Runs the agent bundle with `args` to its end (bounded by `timeoutMs`). */
export async function agent(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Finished> {
  const run = start(AGENT, args, options);
  const timer = setTimeout(() => run.child.kill(), options.timeoutMs ?? 120_000);
  try {
    return await run.done;
  } finally {
    clearTimeout(timer);
  }
}

/** A bundled program of this folder. */
export function program(name: string): string {
  return join(PROGRAMS, `${name}-program.js`);
}
