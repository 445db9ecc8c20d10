/**
 * Process output on the wire: the hand-built ProcessWaitResponse decodes with
 * the generated codec to the same bytes, and batching keeps the order of stdout
 * and stderr, splits at the batch size and sends within one event-loop turn.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { ProcessWaitResponseSchema } from "./generated/wins/process_pb";
import { OutputBatcher, encodeOutput } from "./output-batcher";

describe("process output", () => {
  it("encodes as the generated codec decodes, across varint lengths and chunkings", () => {
    for (const size of [1, 127, 128, 16_383, 16_384, 300_000, 1_048_576]) {
      const data = randomBytes(size);
      const chunks = [
        data.subarray(0, Math.floor(size / 3)),
        data.subarray(Math.floor(size / 3), size - 1),
        data.subarray(size - 1),
      ];
      for (const err of [false, true]) {
        const msg = fromBinary(ProcessWaitResponseSchema, encodeOutput(err, chunks, size));
        assert.equal(msg.Options.case, err ? "StdErr" : "StdOut", `size ${size}`);
        assert.ok(Buffer.from(msg.Options.value).equals(data), `size ${size}`);
      }
    }
  });

  it("batches in order, splits at 1 MiB, sends by the next turn, and pauses while too much is unwritten", async () => {
    const sent: { err: boolean; data: string }[] = [];
    const unwritten: (() => void)[] = [];
    const b = new OutputBatcher(
      (err, chunks, _bytes, written) => {
        sent.push({ err, data: Buffer.concat(chunks).toString() });
        unwritten.push(written);
      },
      2 * 1024 * 1024,
    );
    assert.equal(b.add(false, Buffer.from("a")), true);
    b.add(false, Buffer.from("b"));
    b.add(true, Buffer.from("E"));
    b.add(false, Buffer.from("c"));
    assert.deepEqual(
      sent,
      [
        { err: false, data: "ab" },
        { err: true, data: "E" },
      ],
      "a switch of stream sends what was gathered",
    );
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(sent.at(-1), { err: false, data: "c" });
    assert.equal(b.add(false, Buffer.alloc(1024 * 1024, 120)), true, "a full batch goes at once");
    assert.equal(sent.length, 4);
    assert.equal(b.add(false, Buffer.alloc(1024 * 1024, 121)), false, "2 MiB unwritten: pause");
    let resumed = 0;
    b.whenRoom(() => resumed++);
    assert.equal(resumed, 0);
    for (const written of unwritten.splice(0)) written();
    assert.equal(resumed, 1, "resumed once the stream took them");
    b.whenRoom(() => resumed++);
    assert.equal(resumed, 2, "with room, at once");
  });
});
