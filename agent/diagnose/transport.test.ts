import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
import { FrameError, FrameReader, frameArchive, unframeArchive } from "./transport";

describe("the archive framed for a container log", () => {
  const data = randomBytes(10_000);

  it("comes back byte for byte, fed in any pieces, with stderr lines and timestamps mixed in", () => {
    const framed = frameArchive(data);
    const lines = framed.split("\n");
    // What a kubelet log read with timestamps looks like, stderr interleaved.
    const mixed = lines
      .map((l, i) => (l ? `2026-01-01T00:00:00.${i}Z ${l}` : l))
      .join("\nwarning: something on stderr\n");
    const r = new FrameReader();
    for (let i = 0; i < mixed.length; i += 37) r.push(mixed.slice(i, i + 37));
    assert.equal(r.done, true);
    assert.deepEqual(r.result(), data);
    assert.ok(r.other.includes("warning: something on stderr"));
    assert.deepEqual(unframeArchive(`noise\n${framed}`), data);
    assert.deepEqual(unframeArchive(frameArchive(Buffer.alloc(0))), Buffer.alloc(0));
  });

  it("refuses an altered, truncated or reordered archive, saying which", () => {
    const lines = frameArchive(data).trimEnd().split("\n");
    const altered = [...lines];
    const line = altered[3] ?? "";
    altered[3] = `${line.slice(0, -1)}${line.endsWith("A") ? "B" : "A"}`;
    assert.throws(
      () => unframeArchive(altered.join("\n")),
      (e) => e instanceof FrameError && /checksum mismatch/.test(e.message),
    );
    assert.throws(
      () => unframeArchive(lines.slice(0, -5).join("\n")),
      /ends after \d+ of \d+ data lines, without an end line/,
    );
    const swapped = [...lines];
    [swapped[2], swapped[3]] = [swapped[3] ?? "", swapped[2] ?? ""];
    assert.throws(() => unframeArchive(swapped.join("\n")), /data line 2 where line 1 was expected/);
    assert.throws(() => unframeArchive("error: --config x: no such file\n"), /no begin line/);
    const sha = /sha256=([0-9a-f]+)/.exec(lines[0] ?? "")?.[1] ?? "";
    const lied = [(lines[0] ?? "").replace(sha, "0".repeat(64)), ...lines.slice(1)];
    assert.throws(() => unframeArchive(lied.join("\n")), /checksum mismatch/);
  });
});
