/**
 * The diagnostics archive framed for a container log, so `winfleet diagnose NODE` can carry it
 * through the API server's `pods/log` (the kubelet's `containerLogs`), which is text and line
 * based: the kubelet stores each line in its CRI log file and hands stdout and stderr back
 * interleaved. The archive goes out as a begin line with its size and SHA-256, numbered base64
 * lines, and an end line; every other line (a warning on stderr, a log prefix) is ignored, and a
 * missing, repeated or altered line is caught by the numbering and the checksum.
 */
import { createHash } from "node:crypto";
import { printable } from "../common";

const MAGIC = "winfleet-diagnose";
/**
 * Base64 characters per data line (3 KiB of archive): under the 16 KiB a container runtime
 * writes as one log entry, and long enough that the log file — which the kubelet rotates at
 * `containerLogMaxSize`, 10 MiB by default — is not much larger than the base64 itself.
 */
const LINE = 4096;
/** The largest archive a begin line may announce (a node's archive is megabytes; this is a bound, not a size). */
export const MAX_ARCHIVE_BYTES = 1024 ** 3;
/** The longest line read whole: a data line with its frame and a log prefix fits. */
const MAX_LINE = LINE + 512;
/** Each other line is kept cut to this, for messages. */
const OTHER_LINE = 500;

/** How many data lines an archive of `size` bytes takes. */
function linesFor(size: number): number {
  return Math.ceil((Math.ceil(size / 3) * 4) / LINE);
}

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
 * frames are skipped. What it holds is bounded by the begin line, itself bounded: the node is
 * not trusted to stop, so a data line past the announced count, or longer than a data line can
 * be, fails at once, and a line of any other kind is kept only in part.
 */
export class FrameReader {
  private rest = "";
  private header: FrameHeader | undefined;
  private readonly parts: string[] = [];
  private ended = false;
  /** The rest of a line too long to keep is being skipped. */
  private skipping = false;
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
    for (const line of lines) {
      if (this.skipping) this.skipping = false;
      else this.line(line.replace(/\r$/, ""));
    }
    if (this.rest.length > MAX_LINE) {
      if (!this.skipping) this.line(this.rest);
      this.rest = "";
      this.skipping = true;
    }
  }

  private line(raw: string): void {
    if (this.ended) return;
    if (raw.length > MAX_LINE) {
      if (this.header && raw.slice(0, 200).includes(`${MAGIC} `))
        throw new FrameError(`a line of more than ${MAX_LINE} characters where a frame line was expected`);
      raw = raw.slice(0, OTHER_LINE);
    }
    // A log read with timestamps (or a runtime that prefixes) puts words before the frame.
    const at = raw.indexOf(`${MAGIC} `);
    if (at < 0) {
      if (raw.trim()) {
        this.other.push(raw.slice(0, OTHER_LINE));
        if (this.other.length > 20) this.other.shift();
      }
      return;
    }
    const line = raw.slice(at + MAGIC.length + 1);
    if (line.startsWith("begin ")) {
      const m = /^begin v1 size=(\d+) sha256=([0-9a-f]{64}) lines=(\d+)$/.exec(line);
      if (!m)
        throw new FrameError(
          `unreadable begin line "${printable(raw, 200)}": the agent on the node speaks another framing (is it older or newer than this winfleet?)`,
        );
      if (this.header)
        throw new FrameError("a second begin line: the log holds two archives (the container ran twice?)");
      const header = { size: Number(m[1]), sha256: m[2] ?? "", lines: Number(m[3]) };
      if (header.size > MAX_ARCHIVE_BYTES)
        throw new FrameError(
          `the begin line announces ${header.size} bytes, more than the ${MAX_ARCHIVE_BYTES} accepted`,
        );
      if (header.lines !== linesFor(header.size))
        throw new FrameError(
          `the begin line announces ${header.lines} data lines for ${header.size} bytes, which take ${linesFor(header.size)}`,
        );
      this.header = header;
      return;
    }
    if (!this.header) return;
    if (line === "end") {
      this.ended = true;
      return;
    }
    const m = /^(\d+) ([A-Za-z0-9+/=]*)$/.exec(line);
    if (!m || (m[2] ?? "").length > LINE) throw new FrameError(`unreadable data line "${printable(raw, 120)}"`);
    if (this.parts.length >= this.header.lines)
      throw new FrameError(`more data lines than the ${this.header.lines} the begin line announced`);
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
