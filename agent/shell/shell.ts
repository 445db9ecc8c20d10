/**
 * The command runners' one interface. The lifecycle engine hands a runner a
 * command and its environment and gets back an envelope; it never knows
 * whether PowerShell or POSIX sh ran it. A runner keeps one long-lived session
 * per apply (starting a shell per command costs more than the command) and
 * restarts it after a timeout; `isolated` invocations get a process of their own.
 */

/** One command to run. */
export interface Invocation {
  /** The command text; may span lines. It is run as written: data arrives only through `env`. */
  readonly command: string;
  /** Variables set for this invocation only, as values (never spliced into code). */
  readonly env: Readonly<Record<string, string>>;
  /** Kill the command (and everything it started) after this long. */
  readonly timeoutMs: number;
  /** Run in a process of its own instead of the session. @default false */
  readonly isolated?: boolean;
  /** Working directory. @default the runner's */
  readonly cwd?: string;
}

/** What one invocation did. */
export interface Envelope {
  /** The command's exit code; null when it was killed (timeout) or could not start. */
  readonly exitCode: number | null;
  /** Standard output, at most {@link OUTPUT_LIMIT} bytes (the end is kept). */
  readonly stdout: Buffer;
  /** Standard error, at most {@link OUTPUT_LIMIT} bytes (the end is kept). */
  readonly stderr: Buffer;
  /** Bytes written in all, including any that were cut. */
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  /** PowerShell error records (message, category, position); empty for sh. */
  readonly errorRecords: readonly string[];
  readonly durationMs: number;
  readonly timedOut: boolean;
}

/** Output kept per stream; what a journal or a person needs is the end. */
export const OUTPUT_LIMIT = 1024 * 1024;

/** A shell session. Invocations are serialised: one runs at a time. */
export interface Shell {
  readonly kind: "sh" | "powershell";
  run(invocation: Invocation): Promise<Envelope>;
  /** Ends the session and anything it left running in its process group. */
  close(): Promise<void>;
}

/** Keeps the last `limit` bytes of a stream while counting all of them. */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private kept = 0;
  total = 0;

  constructor(private readonly limit = OUTPUT_LIMIT) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    this.chunks.push(chunk);
    this.kept += chunk.length;
    while (this.kept - (this.chunks[0]?.length ?? 0) >= this.limit) {
      this.kept -= this.chunks.shift()?.length ?? 0;
    }
  }

  bytes(): Buffer {
    const all = Buffer.concat(this.chunks);
    return all.length > this.limit ? all.subarray(all.length - this.limit) : all;
  }
}

/** Serialises async work: the next call starts when the previous one settled. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const next = this.tail.then(work, work);
    this.tail = next.catch(() => undefined);
    return next;
  }
}
