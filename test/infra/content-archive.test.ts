import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { archiveDirectory } from "../../components/content-archive";
import { scratchDir } from "../support";

const work = scratchDir("archive-");

describe("the content archive", () => {
  const src = join(work, "src");
  const long = `${"d".repeat(90)}/${"e".repeat(60)}/file-with-a-long-name.txt`;
  mkdirSync(join(src, "components", "a"), { recursive: true });
  mkdirSync(join(src, "d".repeat(90), "e".repeat(60)), { recursive: true });
  writeFileSync(join(src, "manifest.json"), '{"format":1}\n');
  writeFileSync(join(src, "components", "a", "run.sh"), "#!/bin/sh\necho hi\n");
  chmodSync(join(src, "components", "a", "run.sh"), 0o755);
  writeFileSync(join(src, "components", "a", "bin.dat"), Buffer.from([0, 1, 2, 255]));
  writeFileSync(join(src, long), "deep\n");

  it("is byte-identical for the same content, whatever the files' times", async () => {
    const a = await archiveDirectory(src);
    writeFileSync(join(src, "manifest.json"), '{"format":1}\n'); // a new mtime, same bytes
    const b = await archiveDirectory(src);
    assert.equal(a.sha256, b.sha256);
    assert.ok(a.data.equals(b.data));
  });

  it("extracts with the system tar to the same files and modes", async () => {
    const { data } = await archiveDirectory(src);
    const file = join(work, "bundle.tgz");
    writeFileSync(file, data);
    const out = join(work, "out");
    mkdirSync(out);
    const r = spawnSync("tar", ["-xzf", file, "-C", out], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    for (const f of ["manifest.json", "components/a/run.sh", "components/a/bin.dat", long])
      assert.ok(readFileSync(join(out, f)).equals(readFileSync(join(src, f))), f);
    assert.equal(statSync(join(out, "components/a/run.sh")).mode & 0o777, 0o755);
    assert.equal(statSync(join(out, "manifest.json")).mode & 0o777, 0o644);
    const listing = spawnSync("tar", ["-tvzf", file], { encoding: "utf8" }).stdout;
    assert.match(listing, /root\/root|0\/0/);
  });

  it("changes its digest when any byte changes", async () => {
    const before = (await archiveDirectory(src)).sha256;
    writeFileSync(join(src, "components", "a", "bin.dat"), Buffer.from([0, 1, 2, 254]));
    assert.notEqual((await archiveDirectory(src)).sha256, before);
  });
});
