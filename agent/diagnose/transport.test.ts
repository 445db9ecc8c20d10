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

describe("a node that does not stop", () => {
  it("fails at the first data line past the announced count, holding no more", () => {
    const framed = frameArchive(Buffer.from("0123456789")).trimEnd().split("\n");
    const r = new FrameReader();
    r.push(`${framed[0]}\n${framed[1]}\n`);
    assert.throws(
      () => r.push(`winfleet-diagnose 1 ${"A".repeat(4096)}\n`),
      (e) => e instanceof FrameError && /more data lines than the 1 the begin line announced/.test(e.message),
    );
  });

  it("refuses a begin line whose size is out of bounds or whose line count does not fit it", () => {
    assert.throws(
      () => new FrameReader().push(`winfleet-diagnose begin v1 size=${2 ** 40} sha256=${"0".repeat(64)} lines=1\n`),
      /more than the 1073741824 accepted/,
    );
    assert.throws(
      () => new FrameReader().push(`winfleet-diagnose begin v1 size=10 sha256=${"0".repeat(64)} lines=60000\n`),
      /announces 60000 data lines for 10 bytes, which take 1/,
    );
  });

  it("refuses a data line longer than a data line can be", () => {
    const r = new FrameReader();
    r.push(`winfleet-diagnose begin v1 size=3 sha256=${"0".repeat(64)} lines=1\n`);
    assert.throws(() => r.push(`winfleet-diagnose 0 ${"A".repeat(5000)}\n`), FrameError);
  });

  it("keeps only the start of a line that never ends, whatever arrives", () => {
    const r = new FrameReader();
    const chunk = "x".repeat(64 * 1024);
    for (let i = 0; i < 200; i++) r.push(chunk); // 12.5 MiB without a newline
    r.push("\nwarning: after\n");
    assert.deepEqual(
      r.other.map((l) => l.length),
      [500, "warning: after".length],
    );
    const held = (r as unknown as { rest: string }).rest.length;
    assert.ok(held <= 4096 + 512, `holds ${held} characters of an unfinished line`);
  });
});
