/**
 * A host process's output on its way to a `Wait` stream: gathered into few
 * messages, each encoded straight into its wire form. A fast writer's output
 * is dozens of 64 KiB reads a turn; per message, protobuf, gRPC and HTTP/2
 * each cost a copy and a header.
 */

/**
 * `ProcessWaitResponse{StdOut|StdErr: chunks}` in protobuf's wire format (field
 * 1 or 2, length-delimited), built in one buffer: protobuf-es's writer would
 * grow a buffer for a large bytes field and copy it again on the way out.
 */
export function encodeOutput(err: boolean, chunks: readonly Buffer[], bytes: number): Buffer {
  let header = 1;
  for (let n = bytes; n >= 0x80; n >>>= 7) header++;
  const out = Buffer.allocUnsafe(1 + header + bytes);
  out[0] = err ? 0x12 : 0x0a;
  let at = 1;
  let n = bytes;
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  for (const c of chunks) at += c.copy(out, at);
  return out;
}

/** The most output one Wait message carries (wins clients accept 4 MiB by default). */
const OUTPUT_BATCH_BYTES = 1024 * 1024;
/** How much output may be written and not yet taken by the stream before the process is paused. */
const OUTPUT_IN_FLIGHT_BYTES = 8 * 1024 * 1024;

/**
 * A process's output as few messages as keep it timely: what the pipes deliver
 * in one turn of the event loop (64 KiB a read) goes out as one message, up to
 * {@link OUTPUT_BATCH_BYTES}, in the order written (a switch between stdout and
 * stderr sends what was gathered).
 *
 * Backpressure counts bytes rather than following the stream's own signal: a
 * gRPC stream reports itself full after every large message, and pausing the
 * process there would leave its pipe and the socket idle by turns.
 */
export class OutputBatcher {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private err = false;
  private scheduled = false;
  private inFlight = 0;
  private waiting: (() => void)[] = [];

  /** `send` writes one message of `chunks` and calls `written` once the stream has taken it. */
  constructor(
    private readonly send: (err: boolean, chunks: readonly Buffer[], bytes: number, written: () => void) => void,
    private readonly limit = OUTPUT_IN_FLIGHT_BYTES,
  ) {}

  /** Adds output; false asks the writer to pause until {@link whenRoom} calls back. */
  add(err: boolean, chunk: Buffer): boolean {
    if (this.bytes > 0 && err !== this.err) this.flush();
    this.err = err;
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes >= OUTPUT_BATCH_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
    return this.hasRoom();
  }

  /** Sends what was gathered now. */
  flush(): void {
    if (this.bytes === 0) return;
    const { chunks, bytes } = this;
    this.chunks = [];
    this.bytes = 0;
    this.inFlight += bytes;
    this.send(this.err, chunks, bytes, () => {
      this.inFlight -= bytes;
      if (!this.hasRoom()) return;
      const waiting = this.waiting;
      this.waiting = [];
      for (const resume of waiting) resume();
    });
  }

  /** Calls `resume` once there is room again (at once if there is). */
  whenRoom(resume: () => void): void {
    if (this.hasRoom()) resume();
    else this.waiting.push(resume);
  }

  private hasRoom(): boolean {
    return this.inFlight + this.bytes < this.limit;
  }
}
