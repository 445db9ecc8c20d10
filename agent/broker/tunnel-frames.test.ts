/** The framed tunnel's codec: frames out, bytes back, the end frame as the end, and refusals. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { FrameDecoder, FrameEncoder, MAX_FRAME } from "./tunnel-frames";

async function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

describe("tunnel frames", () => {
  it("round-trips any bytes, cut anywhere, and ends at the end frame", async () => {
    const data = randomBytes(MAX_FRAME * 2 + 12_345);
    const framed = await collect(Readable.from([data.subarray(0, 7), data.subarray(7)]).pipe(new FrameEncoder()));
    assert.deepEqual([...framed.subarray(framed.length - 4)], [0, 0, 0, 0], "the end frame last");
    // Fed back one odd-sized piece at a time: headers and payloads split across reads.
    const pieces: Buffer[] = [];
    for (let at = 0; at < framed.length; at += 3001) pieces.push(framed.subarray(at, at + 3001));
    assert.ok((await collect(Readable.from(pieces).pipe(new FrameDecoder()))).equals(data));
  });

  it("refuses a frame over the limit, bytes after the end frame, and a connection that ends without one", async () => {
    const header = Buffer.alloc(4);
    header.writeUInt32BE(MAX_FRAME + 1);
    await assert.rejects(collect(Readable.from([header]).pipe(new FrameDecoder())), /over the .* limit/);
    await assert.rejects(
      collect(Readable.from([Buffer.from([0, 0, 0, 0, 1])]).pipe(new FrameDecoder())),
      /after its end frame/,
    );
    await assert.rejects(
      collect(Readable.from([Buffer.from([0, 0, 0, 1, 65])]).pipe(new FrameDecoder())),
      /without its end frame/,
    );
  });
});
