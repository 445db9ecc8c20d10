/**
 * The framed stream tunnel (`winfleet-tunnel/2`): each direction is a run of
 * frames, a 4-byte big-endian length and that many bytes, ended by a frame of
 * length 0. The end of a direction travels inside the connection, which is
 * what a Windows named pipe needs: libuv cannot half-close one (after its own
 * side shuts down it treats 50 ms without incoming data as the other side's
 * end and closes the pipe), so a tunnel that ended a direction by shutting the
 * pipe down would lose an answer the host gives later. The connection itself
 * is closed once both directions have ended.
 */
import { type Duplex, Transform, type TransformCallback } from "node:stream";

/** A frame's payload is at most this long (a larger write is cut into several frames). */
export const MAX_FRAME = 1024 * 1024;

const END = Buffer.alloc(4);

/** Frames what is written to it; its end becomes the end frame. */
export class FrameEncoder extends Transform {
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    for (let at = 0; at < chunk.length; at += MAX_FRAME) {
      const part = chunk.subarray(at, at + MAX_FRAME);
      const header = Buffer.allocUnsafe(4);
      header.writeUInt32BE(part.length);
      this.push(header);
      this.push(part);
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    done(null, END);
  }
}

/**
 * Reads frames back into the bytes they carry, ending at the end frame; bytes
 * after the end frame, or a frame longer than {@link MAX_FRAME}, are an error.
 */
export class FrameDecoder extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes of the current frame still to come. */
  private left = 0;
  private ended = false;

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = Buffer.alloc(0);
    while (data.length > 0) {
      if (this.ended) return done(new Error("the tunnel sent bytes after its end frame"));
      if (this.left > 0) {
        const part = data.subarray(0, this.left);
        this.left -= part.length;
        data = data.subarray(part.length);
        this.push(part);
        continue;
      }
      if (data.length < 4) {
        this.pending = Buffer.from(data);
        break;
      }
      const length = data.readUInt32BE(0);
      data = data.subarray(4);
      if (length > MAX_FRAME)
        return done(new Error(`a tunnel frame of ${length} bytes is over the ${MAX_FRAME} limit`));
      if (length === 0) {
        this.ended = true;
        this.push(null);
      }
      this.left = length;
    }
    done();
  }

  override _flush(done: TransformCallback): void {
    done(this.ended ? null : new Error("the tunnel's connection ended without its end frame"));
  }
}

/** How long the broker waits for the client to close a tunnel whose two directions have ended. */
export const LINGER_MS = 10_000;

/**
 * Joins a framed connection (the pipe) and a plain one (the TCP side) in both
 * directions, under back-pressure: what `plain` sends is framed onto `framed`,
 * and its end becomes the end frame; frames from `framed` are written to
 * `plain`, and the end frame ends `plain`'s writing side. Once both directions
 * have ended, the pipe's client (`closes`) closes the connection: it has read
 * everything the other side sent. The server waits for that ({@link LINGER_MS}
 * at most), since a pipe server that closes first may discard what its client
 * has not read yet. An error on either side destroys both. `head`: framed bytes
 * already read from `framed`.
 */
export function joinFramed(framed: Duplex, plain: Duplex, head: Buffer, closes: boolean): void {
  const decoder = new FrameDecoder();
  const encoder = new FrameEncoder();
  let sent = false;
  let received = false;
  const fail = (): void => {
    framed.destroy();
    plain.destroy();
  };
  let peerClosed = false;
  const done = (): void => {
    if (!sent || !received) return;
    if (closes) return void framed.end();
    // The client reads our end frame before it closes: nothing still queued here is lost.
    if (peerClosed) return void framed.destroy();
    const timer = setTimeout(() => framed.destroy(), LINGER_MS);
    framed.once("close", () => clearTimeout(timer));
  };
  if (!closes)
    framed.once("end", () => {
      peerClosed = true;
      done();
    });
  for (const s of [decoder, framed, plain]) s.on("error", fail);
  decoder.once("end", () => {
    received = true;
    done();
  });
  encoder.once("end", () => {
    sent = true;
    done();
  });
  if (head.length > 0) decoder.write(head);
  framed.pipe(decoder).pipe(plain);
  plain.pipe(encoder).pipe(framed, { end: false });
}
