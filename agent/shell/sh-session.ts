/**
 * The POSIX sh runner: one long-lived `sh` per apply (see {@link ShDriver} for
 * how commands stay apart from each other and data stays apart from code), a
 * kill of the whole process group and a fresh session when a command outlives
 * its timeout, and `isolated` commands in a process group of their own.
 *
 * A command that must leave a process running detaches it (`setsid … &` with
 * its output redirected), as a Windows component registers a service: anything
 * left in the session's process group dies with it on a timeout.
 */
import { spawn } from "node:child_process";
import { AgentError, AgentErrorCode } from "../common";
import { killProcessGroup } from "./process-group";
import { ShDriver } from "./sh-driver";
import { type Envelope, type Invocation, SerialQueue, type Shell, TailBuffer } from "./shell";

/** Options for {@link ShSession}. */
export interface ShOptions {
  /** The shell. @default "/bin/sh" */
  readonly sh?: string;
  /** The session's base environment; each invocation adds its own. @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Working directory for commands. @default the agent's */
  readonly cwd?: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A long-lived POSIX sh session. */
export class ShSession implements Shell {
  readonly kind = "sh" as const;
  private driver: ShDriver | undefined;
  private readonly queue = new SerialQueue();
  private readonly base: Record<string, string>;
  private closed = false;

  constructor(private readonly options: ShOptions = {}) {
    if (process.platform === "win32")
      throw new AgentError(
        AgentErrorCode.Unsupported,
        "the sh runner needs a POSIX host; Windows content uses shell: powershell",
      );
    this.base = cleanEnv(options.env ?? process.env);
  }

  /** Runs one command; see {@link Shell.run}. */
  async run(invocation: Invocation): Promise<Envelope> {
    check(invocation);
    return this.queue.run(() => (invocation.isolated ? this.runIsolated(invocation) : this.runInSession(invocation)));
  }

  /** Ends the session; processes its commands detached keep running. */
  async close(): Promise<void> {
    await this.queue.run(async () => {
      this.closed = true;
      await this.driver?.end();
      this.driver = undefined;
    });
  }

  private async runInSession(invocation: Invocation): Promise<Envelope> {
    if (this.closed) throw new AgentError(AgentErrorCode.Unsupported, "the sh session is closed");
    const started = performance.now();
    if (invocation.cwd !== undefined && invocation.cwd !== this.options.cwd) {
      // A different working directory is rare enough to take a process of its own.
      return this.runIsolated(invocation);
    }
    if (!this.driver || this.driver.exited)
      this.driver = new ShDriver(this.options.sh ?? "/bin/sh", this.base, this.options.cwd);
    const driver = this.driver;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void driver.kill();
    }, invocation.timeoutMs);
    try {
      const ready = await driver.setEnv(invocation.env);
      const result = ready ? await driver.run(invocation.command) : undefined;
      const stdout = result?.stdout ?? new TailBuffer();
      const stderr = result?.stderr ?? new TailBuffer();
      const status = result?.status ?? null;
      if (status === null) {
        // Killed on timeout, or the session died under the command: start afresh next time.
        await driver.kill();
        this.driver = undefined;
        if (!timedOut) stderr.push(Buffer.from("\nwinfleet: the sh session ended while the command ran\n"));
      }
      return envelope(timedOut ? null : status, stdout, stderr, started, timedOut);
    } finally {
      clearTimeout(timer);
    }
  }

  private async runIsolated(invocation: Invocation): Promise<Envelope> {
    const started = performance.now();
    const out = new TailBuffer();
    const err = new TailBuffer();
    let timedOut = false;
    const shell = this.options.sh ?? "/bin/sh";
    const code = await new Promise<number | null>((resolve) => {
      // The command is the -c script itself; data only in the environment.
      const child = spawn(shell, ["-c", invocation.command, "winfleet-sh"], {
        env: { ...this.base, ...invocation.env },
        cwd: invocation.cwd ?? this.options.cwd,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      const timer = setTimeout(() => {
        timedOut = true;
        if (child.pid !== undefined) killProcessGroup(child.pid);
      }, invocation.timeoutMs);
      child.stdout.on("data", (c: Buffer) => out.push(c));
      child.stderr.on("data", (c: Buffer) => err.push(c));
      child.on("error", (e) => {
        err.push(Buffer.from(`winfleet: cannot start ${shell}: ${e.message}\n`));
        clearTimeout(timer);
        resolve(null);
      });
      // "exit", not "close": a process the command left running may hold the pipes open.
      child.on("exit", (status) => {
        clearTimeout(timer);
        setImmediate(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          resolve(status);
        });
      });
    });
    return envelope(timedOut ? null : code, out, err, started, timedOut);
  }
}

function check(invocation: Invocation): void {
  for (const [name, value] of Object.entries(invocation.env)) {
    if (!IDENTIFIER.test(name))
      throw new AgentError(AgentErrorCode.InvalidInput, `"${name}" is not a valid environment variable name`);
    if (value.includes("\0"))
      throw new AgentError(
        AgentErrorCode.InvalidInput,
        `the value of ${name} contains a NUL byte, which no environment can carry`,
      );
  }
  if (invocation.command.includes("\0"))
    throw new AgentError(AgentErrorCode.InvalidInput, "the command contains a NUL byte");
}

function envelope(
  exitCode: number | null,
  stdout: TailBuffer,
  stderr: TailBuffer,
  started: number,
  timedOut: boolean,
): Envelope {
  return {
    exitCode,
    stdout: stdout.bytes(),
    stderr: stderr.bytes(),
    stdoutBytes: stdout.total,
    stderrBytes: stderr.total,
    errorRecords: [],
    durationMs: performance.now() - started,
    timedOut,
  };
}

/** The environment without undefined values (what spawn expects). */
export function cleanEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}
