/**
 * A test-only command runner: each command is a batch file run by `cmd.exe`,
 * standing in for PowerShell (which Wine lacks) so the lifecycle engine's own
 * Windows paths — its journal, reboot requests, resume and crash safety — run
 * under Windows' Node. It is not product code: cmd expands `%NAME%` before it
 * parses a line, so a value holding `&` or `|` would run as a command, and the
 * agent keeps data apart from code. Commands here use only the values the
 * engine sets (WINFLEET_ROOT and the like), never data a node could be given.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Envelope, type Invocation, SerialQueue, type Shell, TailBuffer } from "../../agent/shell/shell";

/** Runs each invocation as `cmd.exe /d /c <batch file>`, one at a time. */
export class CmdShell implements Shell {
  /** It stands in for the content's PowerShell: the engine asks for a shell by the component's kind. */
  readonly kind = "powershell" as const;
  private readonly queue = new SerialQueue();
  private readonly dir = mkdtempSync(join(tmpdir(), "wf-cmd-"));

  constructor(
    private readonly env: Readonly<Record<string, string>>,
    private readonly cwd: string,
  ) {}

  run(invocation: Invocation): Promise<Envelope> {
    return this.queue.run(() => this.runOne(invocation));
  }

  close(): Promise<void> {
    return this.queue.run(() => {
      rmSync(this.dir, { recursive: true, force: true });
      return Promise.resolve();
    });
  }

  private async runOne(invocation: Invocation): Promise<Envelope> {
    const started = performance.now();
    const batch = join(this.dir, `${randomBytes(6).toString("hex")}.cmd`);
    writeFileSync(batch, `@echo off\r\n${invocation.command.replace(/\r?\n/g, "\r\n")}\r\n`);
    const out = new TailBuffer();
    const err = new TailBuffer();
    let timedOut = false;
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn("cmd.exe", ["/d", "/c", batch], {
        env: { ...this.env, ...invocation.env },
        cwd: invocation.cwd ?? this.cwd,
        stdio: ["ignore", "pipe", "pipe"],
        windowsHide: true,
      });
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill();
      }, invocation.timeoutMs);
      child.stdout.on("data", (c: Buffer) => out.push(c));
      child.stderr.on("data", (c: Buffer) => err.push(c));
      child.once("error", (e) => {
        err.push(Buffer.from(`cannot start cmd.exe: ${e.message}\n`));
        clearTimeout(timer);
        resolve(null);
      });
      child.once("close", (status) => {
        clearTimeout(timer);
        resolve(status);
      });
    });
    rmSync(batch, { force: true });
    return {
      exitCode: timedOut ? null : code,
      stdout: out.bytes(),
      stderr: err.bytes(),
      stdoutBytes: out.total,
      stderrBytes: err.total,
      errorRecords: [],
      durationMs: performance.now() - started,
      timedOut,
    };
  }
}
