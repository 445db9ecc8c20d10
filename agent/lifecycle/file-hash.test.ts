import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { WHOLE_FILE_LIMIT, hashLanes, jsLane, poolLane } from "./file-hash";

const dir = mkdtempSync(join(tmpdir(), "winfleet-file-hash-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const sha512 = (b: Uint8Array): string => createHash("sha512").update(b).digest("hex");
// Empty, smaller than a read, exactly a read, across reads, at and past the whole-file limit.
const SIZES = [0, 1, 1024 * 1024, 1024 * 1024 + 1, 3 * 1024 * 1024 + 17, WHOLE_FILE_LIMIT, WHOLE_FILE_LIMIT + 1];
const samples = SIZES.map((size, i) => {
  const data = randomBytes(size);
  const path = join(dir, `f${i}`);
  writeFileSync(path, data);
  return { path, size, sum: sha512(data) };
});

describe("file hash lanes", () => {
  it("give every file's SHA-512 on the JS thread and in the pool, one buffer reused across sizes", async () => {
    for (const lane of [jsLane(), poolLane()])
      for (const s of [...samples, ...[...samples].reverse()]) assert.equal(await lane.sha512(s.path, s.size), s.sum);
  });

  it("hash files concurrently, one at a time per lane, whatever the number of cores", async () => {
    for (const cores of [1, 2, 4]) {
      const lanes = hashLanes(cores);
      assert.equal(lanes.length, cores + 1);
      const sums = await Promise.all(
        lanes.map(async (lane, i) => {
          const out: string[] = [];
          for (const s of samples.slice(i % 2)) out.push(await lane.sha512(s.path, s.size));
          return out;
        }),
      );
      sums.forEach((got, i) =>
        assert.deepEqual(
          got,
          samples.slice(i % 2).map((s) => s.sum),
        ),
      );
    }
  });

  it("hash what is there when the file shrank after its lstat, so it shows as changed", async () => {
    const data = randomBytes(2 * 1024 * 1024);
    const path = join(dir, "shrinks");
    writeFileSync(path, data);
    truncateSync(path, 1000);
    for (const lane of [jsLane(), poolLane()]) {
      const got = await lane.sha512(path, data.length);
      assert.equal(got, sha512(data.subarray(0, 1000)));
      assert.notEqual(got, sha512(data));
    }
  });

  it("reject for a file that cannot be read", async () => {
    for (const lane of [jsLane(), poolLane()]) await assert.rejects(lane.sha512(join(dir, "absent"), 10), /ENOENT/);
  });
});
