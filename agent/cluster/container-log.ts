/**
 * Container logs as a kubelet keeps them: each container's stdout and stderr written, line by
 * line, to a file in the CRI logging format (`<RFC 3339 time> <stream> <F|P> <text>`, P for a
 * piece of a line longer than the runtime's buffer), and read back the way the kubelet's
 * `containerLogs` endpoint serves them: stdout and stderr interleaved in the order written,
 * optionally with each line's time, only the last `tailLines`, at most `limitBytes`, and with
 * `follow` until the container has ended.
 */
import { createWriteStream, type WriteStream } from "node:fs";
import { mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import { StringDecoder } from "node:string_decoder";

/** Longest line piece written as one entry, as containerd's 16 KiB buffer. */
const MAX_LINE = 16 * 1024;

const stamp = (): string => {
  const iso = new Date().toISOString();
  // The kubelet's own timestamps carry nanoseconds; the milliseconds are padded to keep the form.
  return iso.replace(/\.(\d{3})Z$/, ".$1000000Z");
};

/** One container's log file, written as its output arrives. */
export class ContainerLogWriter {
  private readonly out: WriteStream;
  private readonly pending = new Map<string, string>();
  private closed = false;

  private constructor(readonly file: string) {
    this.out = createWriteStream(file, { flags: "a", mode: 0o640 });
    this.out.on("error", () => undefined);
  }

  /** Opens (appends to) `file`, making its directory. */
  static async open(file: string): Promise<ContainerLogWriter> {
    await mkdir(dirname(file), { recursive: true, mode: 0o750 });
    return new ContainerLogWriter(file);
  }

  /** Copies a child's stream into the log; resolves when the stream has ended and its last line is written. */
  attach(stream: Readable, name: "stdout" | "stderr"): Promise<void> {
    return new Promise((resolve) => {
      const decoder = new StringDecoder("utf8");
      stream.on("data", (c: Buffer) => this.write(name, decoder.write(c)));
      stream.once("close", () => {
        const rest = this.pending.get(name);
        // A last line without its newline is written whole, as a runtime does when the stream closes.
        if (rest) this.entry(name, "F", rest);
        this.pending.delete(name);
        resolve();
      });
    });
  }

  private write(name: string, text: string): void {
    const lines = ((this.pending.get(name) ?? "") + text).split("\n");
    let rest = lines.pop() ?? "";
    for (const line of lines) this.entry(name, "F", line);
    while (rest.length > MAX_LINE) {
      this.entry(name, "P", rest.slice(0, MAX_LINE));
      rest = rest.slice(MAX_LINE);
    }
    this.pending.set(name, rest);
  }

  private entry(name: string, tag: "F" | "P", text: string): void {
    if (!this.closed) this.out.write(`${stamp()} ${name} ${tag} ${text}\n`);
  }

  /** Flushes and closes the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve) => this.out.end(() => resolve()));
  }
}

/** How a log is read: the kubelet's `containerLogs` query. */
export interface LogQuery {
  readonly follow?: boolean;
  readonly tailLines?: number;
  readonly limitBytes?: number;
  readonly timestamps?: boolean;
  /** Only entries written at or after this time (`sinceTime`, or now less `sinceSeconds`). */
  readonly since?: Date;
}

/** One entry of a CRI log file as served: its text (a full line ends in a newline). */
function render(entry: string, timestamps: boolean, since?: Date): string | undefined {
  const m = /^(\S+) (stdout|stderr) ([FP]) ?(.*)$/.exec(entry);
  if (!m) return undefined;
  if (since && Date.parse(m[1] ?? "") < since.getTime()) return undefined;
  const text = `${m[4] ?? ""}${m[3] === "F" ? "\n" : ""}`;
  return timestamps ? `${m[1]} ${text}` : text;
}

/**
 * Streams the log at `file` to `write` as the kubelet serves it. With `follow`, waits for more
 * while `running()` says the container runs (and `signal` is not aborted), then serves what the
 * container wrote last. `write` returning false ends the read (the client has gone).
 */
export async function readContainerLog(
  file: string,
  query: LogQuery,
  running: () => boolean,
  write: (text: string) => Promise<boolean>,
  signal: AbortSignal,
): Promise<void> {
  let budget = query.limitBytes ?? Infinity;
  const emit = async (text: string): Promise<boolean> => {
    if (budget <= 0) return false;
    const bytes = Buffer.from(text);
    const part = bytes.length > budget ? bytes.subarray(0, budget).toString() : text;
    budget -= Math.min(bytes.length, budget);
    return (await write(part)) && budget > 0;
  };
  // One decoder throughout: a character split between two reads is decoded whole.
  const decoder = new StringDecoder("utf8");
  const first = await readFile(file).catch(() => Buffer.alloc(0));
  let offset = first.length;
  let entries = decoder.write(first).split("\n");
  let partial = entries.pop() ?? "";
  // As the kubelet: the time bound first, then the tail of what is left.
  const since = query.since;
  if (since) entries = entries.filter((e) => render(e, false, since) !== undefined);
  if (query.tailLines !== undefined) entries = query.tailLines > 0 ? entries.slice(-query.tailLines) : [];
  for (const e of entries) {
    const text = render(e, query.timestamps === true, query.since);
    if (text !== undefined && !(await emit(text))) return;
  }
  if (!query.follow) return;
  const handle = await open(file, "r").catch(() => undefined);
  if (!handle) return;
  try {
    const buf = Buffer.alloc(64 * 1024);
    for (;;) {
      if (signal.aborted) return;
      const alive = running();
      const { bytesRead } = await handle.read(buf, 0, buf.length, offset);
      if (bytesRead > 0) {
        offset += bytesRead;
        const lines = (partial + decoder.write(buf.subarray(0, bytesRead))).split("\n");
        partial = lines.pop() ?? "";
        for (const e of lines) {
          const text = render(e, query.timestamps === true, query.since);
          if (text !== undefined && !(await emit(text))) return;
        }
        continue;
      }
      // Read to the end after the container had ended: nothing more will come.
      if (!alive) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await handle.close();
  }
}
