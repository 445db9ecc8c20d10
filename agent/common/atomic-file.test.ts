/**
 * Batched atomic writes on real files: what a flush leaves, what a failure
 * leaves, and the temp files a killed writer left behind.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AtomicWriteBatch } from "./atomic-file";

const scratch = mkdtempSync(join(tmpdir(), "atomic-batch-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

describe("AtomicWriteBatch", () => {
  it("writes nothing in place before the flush, everything with its mode after, and no temp file", async () => {
    const dir = mkdtempSync(join(scratch, "flush-"));
    const batch = new AtomicWriteBatch(true, 3);
    await batch.add(join(dir, "a"), Buffer.from("A"), 0o600);
    await batch.add(join(dir, "b"), Buffer.alloc(200_000, 66), 0o644);
    assert.deepEqual(
      readdirSync(dir).filter((n) => !n.endsWith(".tmp")),
      [],
      "staged only",
    );
    await batch.add(join(dir, "c"), Buffer.from("C"), 0o640);
    assert.deepEqual(readdirSync(dir).sort(), ["a", "b", "c"], "the limit flushed the batch");
    assert.equal(statSync(join(dir, "a")).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, "c")).mode & 0o777, 0o640);
    assert.equal(readFileSync(join(dir, "b")).length, 200_000);
  });

  it("discards staged files after a failure, leaving the old ones", async () => {
    const dir = mkdtempSync(join(scratch, "discard-"));
    writeFileSync(join(dir, "a"), "old");
    const batch = new AtomicWriteBatch(false);
    await batch.add(join(dir, "a"), Buffer.from("new"), 0o644);
    await assert.rejects(batch.add(join(dir, "missing", "b"), Buffer.from("x"), 0o644), /ENOENT/);
    batch.discard();
    assert.deepEqual(readdirSync(dir), ["a"]);
    assert.equal(readFileSync(join(dir, "a"), "utf8"), "old");
  });

  it("removes the temp files a killed writer left for the files it writes, and nothing else", async () => {
    const dir = mkdtempSync(join(scratch, "leftover-"));
    const left = [".a.1f2e3d4c0.tmp", ".a.0123456789ab.tmp"]; // this module's names, new and old
    const kept = [".b.1f2e3d4c0.tmp", ".a.short.tmp", ".a.1f2e3d4c0.tmp.bak", "a.1f2e3d4c0.tmp"];
    for (const n of [...left, ...kept]) writeFileSync(join(dir, n), "stale");
    const batch = new AtomicWriteBatch(true);
    await batch.add(join(dir, "a"), Buffer.from("A"), 0o644);
    await batch.flush();
    assert.deepEqual(readdirSync(dir).sort(), ["a", ...kept].sort());
  });
});
