/**
 * The diagnostics archive framed for a container log, so `winfleet diagnose NODE` can carry it
 * through the API server's `pods/log` (the kubelet's `containerLogs`), which is text and line
 * based: the kubelet stores each line in its CRI log file and hands stdout and stderr back
 * interleaved. The archive goes out as a begin line with its size and SHA-256, numbered base64
 * lines, and an end line; every other line (a warning on stderr, a log prefix) is ignored, and a
 * missing, repeated or altered line is caught by the numbering and the checksum.
 */
import { createHash } from "node:crypto";

const MAGIC = "winfleet-diagnose";
/**
 * Base64 characters per data line (3 KiB of archive): under the 16 KiB a container runtime
 * writes as one log entry, and long enough that the log file — which the kubelet rotates at
 * `containerLogMaxSize`, 10 MiB by default — is not much larger than the base64 itself.
 */
const LINE = 4096;

/** `data` as the framed text `winfleet-agent diagnose --out -` prints. */
export function frameArchive(data: Buffer): string {
  const sha256 = createHash("sha256").update(data).digest("hex");
  const b64 = data.toString("base64");
  const lines = Math.ceil(b64.length / LINE);
  const out = [`${MAGIC} begin v1 size=${data.length} sha256=${sha256} lines=${lines}`];
  for (let i = 0; i < lines; i++) out.push(`${MAGIC} ${i} ${b64.slice(i * LINE, (i + 1) * LINE)}`);
  out.push(`${MAGIC} end`);
  return `${out.join("\n")}\n`;
}

/** Why framed text could not be turned back into the archive. */
export class FrameError extends Error {
  override readonly name = "FrameError";
}

/** What a begin line announced. */
export interface FrameHeader {
  readonly size: number;
  readonly sha256: string;
  readonly lines: number;
}

/**
 * Reads framed text as it arrives (a followed log), line by line; `result` checks and returns
 * the archive once the end line was read. Lines before the begin line and lines that are not
 * frames are skipped.
 */
export class FrameReader {
  private rest = "";
  private header: FrameHeader | undefined;
  private readonly parts: string[] = [];
  private ended = false;
  /** Non-frame lines seen (stderr of the pod: the agent's errors), the last few kept for messages. */
  readonly other: string[] = [];

  /** Whether the end line has been read. */
  get done(): boolean {
    return this.ended;
  }

  /** The begin line's announcement, once read. */
  get announced(): FrameHeader | undefined {
    return this.header;
  }

  /** Feeds the next piece of text. */
  push(text: string): void {
    const lines = (this.rest + text).split("\n");
    this.rest = lines.pop() ?? "";
    for (const line of lines) this.line(line.replace(/\r$/, ""));
  }

  private line(raw: string): void {
    if (this.ended) return;
    // A log read with timestamps (or a runtime that prefixes) puts words before the frame.
    const at = raw.indexOf(`${MAGIC} `);
    if (at < 0) {
      if (raw.trim()) this.other.splice(0, Math.max(0, this.other.length - 19), raw);
      return;
    }
    const line = raw.slice(at + MAGIC.length + 1);
    if (line.startsWith("begin ")) {
      const m = /^begin v1 size=(\d+) sha256=([0-9a-f]{64}) lines=(\d+)$/.exec(line);
      if (!m)
        throw new FrameError(
          `unreadable begin line ${JSON.stringify(raw.slice(0, 200))}: the agent on the node speaks another framing (is it older or newer than this winfleet?)`,
        );
      if (this.header)
        throw new FrameError("a second begin line: the log holds two archives (the container ran twice?)");
      this.header = { size: Number(m[1]), sha256: m[2] ?? "", lines: Number(m[3]) };
      return;
    }
    if (!this.header) return;
    if (line === "end") {
      this.ended = true;
      return;
    }
    const m = /^(\d+) ([A-Za-z0-9+/=]*)$/.exec(line);
    if (!m) throw new FrameError(`unreadable data line ${JSON.stringify(raw.slice(0, 120))}`);
    const n = Number(m[1]);
    if (n !== this.parts.length)
      throw new FrameError(
        `data line ${n} where line ${this.parts.length} was expected: the log lost or repeated lines (was it rotated while the archive was written?)`,
      );
    this.parts.push(m[2] ?? "");
  }

  /** The archive, checked against the begin line's size and SHA-256. */
  result(): Buffer {
    if (this.rest) this.line(this.rest.replace(/\r$/, ""));
    this.rest = "";
    const h = this.header;
    if (!h) throw new FrameError("no archive in the output (no begin line)");
    if (!this.ended)
      throw new FrameError(
        `the output ends after ${this.parts.length} of ${h.lines} data lines, without an end line: the archive is incomplete`,
      );
    if (this.parts.length !== h.lines)
      throw new FrameError(`${this.parts.length} data lines where the begin line announced ${h.lines}`);
    const data = Buffer.from(this.parts.join(""), "base64");
    if (data.length !== h.size)
      throw new FrameError(`the archive is ${data.length} bytes where ${h.size} were announced`);
    const sha = createHash("sha256").update(data).digest("hex");
    if (sha !== h.sha256)
      throw new FrameError(`checksum mismatch: the archive's SHA-256 is ${sha}, the agent announced ${h.sha256}`);
    return data;
  }
}

/** The archive in `text` (all of a log at once). */
export function unframeArchive(text: string): Buffer {
  const r = new FrameReader();
  r.push(text);
  return r.result();
}
