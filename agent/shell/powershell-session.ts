/**
 * The PowerShell runner: one long-lived `powershell.exe` (Windows) or `pwsh`
 * (elsewhere) per apply, driven through node-powershell, with the same
 * guarantees as the sh runner. Each invocation gets a directory holding the
 * command as a script file, its variables as JSON and its working directory;
 * the session's helper (see {@link powerShellInvoker}) runs it and writes the
 * output, error records and exit code back as files, so nothing depends on
 * node-powershell's stderr heuristics. A command that outlives its timeout has
 * the session's whole process tree killed; the next command gets a new session.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PowerShell } from "node-powershell";
import { z } from "zod";
import { AgentError, AgentErrorCode, errorMessage } from "../common";
import { killProcessTree } from "./process-group";
import { COMPLETED_MARKER, invocationLine, isolatedScript, powerShellInvoker } from "./powershell-wrapper";
import { type Envelope, type Invocation, OUTPUT_LIMIT, SerialQueue, type Shell } from "./shell";
import { cleanEnv } from "./sh-session";

/** Options for {@link PowerShellSession}. */
export interface PowerShellOptions {
  /** The executable. @default "powershell.exe" on Windows, "pwsh" elsewhere */
  readonly executable?: string;
  /** Base environment. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Working directory for commands. @default the agent's */
  readonly cwd?: string;
  /** Where invocation directories live. @default the OS temp dir */
  readonly tempDir?: string;
}

const resultSchema = z.object({ exitCode: z.number().int(), errorRecords: z.array(z.string()).default([]) });
const ARGS = { "-NoLogo": true, "-NoProfile": true, "-NonInteractive": true, "-ExecutionPolicy": "Bypass" } as const;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The default PowerShell for this OS. */
export function defaultPowerShell(platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? "powershell.exe" : "pwsh";
}

/** A long-lived PowerShell session. */
export class PowerShellSession implements Shell {
  readonly kind = "powershell" as const;
  private shell: { ps: PowerShell; pid: number } | undefined;
  private root: string | undefined;
  private counter = 0;
  private readonly queue = new SerialQueue();
  private readonly executable: string;
  private readonly base: Record<string, string>;

  constructor(private readonly options: PowerShellOptions = {}) {
    this.executable = options.executable ?? defaultPowerShell();
    this.base = cleanEnv(options.env ?? process.env);
  }

  /** Runs one command; see {@link Shell.run}. */
  async run(invocation: Invocation): Promise<Envelope> {
    return this.queue.run(async () => {
      const started = performance.now();
      const dir = await this.prepare(invocation);
      try {
        const timedOut = invocation.isolated
          ? await this.runIsolated(dir, invocation)
          : await this.runInSession(dir, invocation.timeoutMs);
        return await this.collect(dir, started, timedOut);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  /** Ends the session. */
  async close(): Promise<void> {
    await this.queue.run(async () => {
      await this.dispose();
      if (this.root) await rm(this.root, { recursive: true, force: true });
      this.root = undefined;
    });
  }

  private async prepare(invocation: Invocation): Promise<string> {
    this.root ??= await mkdtemp(join(this.options.tempDir ?? tmpdir(), "winfleet-ps-"));
    const dir = join(this.root, `${++this.counter}-${randomBytes(4).toString("hex")}`);
    await mkdir(dir, { mode: 0o700 });
    // Windows PowerShell reads a script without a BOM in the ANSI code page.
    await writeFile(
      join(dir, "command.ps1"),
      Buffer.concat([BOM, Buffer.from(`${invocation.command}\n\n${COMPLETED_MARKER}\n`)]),
      { mode: 0o600 },
    );
    await writeFile(join(dir, "env.json"), JSON.stringify(invocation.env), { mode: 0o600 });
    await writeFile(join(dir, "cwd.txt"), invocation.cwd ?? this.options.cwd ?? process.cwd());
    return dir;
  }

  private async session(): Promise<{ ps: PowerShell; pid: number }> {
    if (this.shell) return this.shell;
    const ps = new PowerShell({
      executable: this.executable,
      executableOptions: ARGS,
      spawnOptions: { env: this.base, cwd: this.options.cwd, windowsHide: true },
      throwOnInvocationError: false,
    });
    try {
      await ps.invoke(powerShellInvoker());
      const pid = Number((await ps.invoke("$PID")).raw.trim());
      this.shell = { ps, pid };
      return this.shell;
    } catch (e) {
      await ps.dispose().catch(() => undefined);
      throw new AgentError(AgentErrorCode.Unsupported, `cannot start ${this.executable}: ${errorMessage(e)}`, {
        cause: e,
      });
    }
  }

  private async dispose(): Promise<void> {
    const s = this.shell;
    this.shell = undefined;
    if (!s) return;
    await killProcessTree(s.pid);
    await s.ps.dispose("SIGKILL").catch(() => undefined);
  }

  private async runInSession(dir: string, timeoutMs: number): Promise<boolean> {
    const { ps, pid } = await this.session();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void killProcessTree(pid);
    }, timeoutMs);
    try {
      await ps.invoke(invocationLine(dir));
    } catch {
      // the session died (killed on timeout, or crashed); the result files say what is known
    } finally {
      clearTimeout(timer);
    }
    if (timedOut) await this.dispose();
    return timedOut;
  }

  private async runIsolated(dir: string, invocation: Invocation): Promise<boolean> {
    const script = join(dir, "isolated.ps1");
    await writeFile(script, Buffer.concat([BOM, Buffer.from(isolatedScript())]));
    const args = [
      "-NoLogo",
      "-NoProfile",
      "-NonInteractive",
      "-ExecutionPolicy",
      "Bypass",
      "-File",
      script,
      "-Dir",
      dir,
    ];
    return new Promise<boolean>((resolve) => {
      const child = spawn(this.executable, args, {
        env: this.base,
        cwd: invocation.cwd ?? this.options.cwd,
        stdio: "ignore",
        windowsHide: true,
        detached: process.platform !== "win32",
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        if (child.pid !== undefined) void killProcessTree(child.pid);
      }, invocation.timeoutMs);
      child.on("error", () => {
        clearTimeout(timer);
        resolve(false);
      });
      child.on("exit", () => {
        clearTimeout(timer);
        resolve(timedOut);
      });
    });
  }

  private async collect(dir: string, started: number, timedOut: boolean): Promise<Envelope> {
    const read = async (name: string): Promise<Buffer> => readFile(join(dir, name)).catch(() => Buffer.alloc(0));
    const [stdout, stderr, resultText] = await Promise.all([
      read("stdout.txt"),
      read("stderr.txt"),
      read("result.json"),
    ]);
    let exitCode: number | null = null;
    let errorRecords: string[] = [];
    const parsed = resultText.length > 0 ? resultSchema.safeParse(safeJson(resultText.toString("utf8"))) : undefined;
    if (parsed?.success && !timedOut) {
      exitCode = parsed.data.exitCode;
      errorRecords = parsed.data.errorRecords;
    }
    const note =
      exitCode === null && !timedOut
        ? Buffer.from("\nwinfleet: PowerShell ended without reporting a result\n")
        : Buffer.alloc(0);
    const err = Buffer.concat([stderr, note]);
    return {
      exitCode,
      stdout: stdout.subarray(Math.max(0, stdout.length - OUTPUT_LIMIT)),
      stderr: err.subarray(Math.max(0, err.length - OUTPUT_LIMIT)),
      stdoutBytes: stdout.length,
      stderrBytes: err.length,
      errorRecords,
      durationMs: performance.now() - started,
      timedOut,
    };
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch {
    return undefined;
  }
}
