import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AgentError } from "../common";
import { type LedgerRecord, readLedger, updateLedger, writeLedger } from "./ledger";

const dir = mkdtempSync(join(tmpdir(), "ledger-test-"));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const fresh = (): string => join(dir, `ledger-${files++}.json`);

const rec = (n: number): LedgerRecord => ({
  fingerprint: `fp${n}`,
  sha512: String(n).padStart(128, "0"),
  mode: 0o644,
  host: `/host/${n}`,
});
const lines = (file: string): string[] => readFileSync(file, "utf8").split("\n").filter(Boolean);

describe("the ledger log", () => {
  it("reads back what was recorded, each update one appended line", async () => {
    const file = fresh();
    assert.deepEqual((await readLedger(file)).files, {}, "no file is an empty ledger");
    await updateLedger(file, { "/a": rec(1), "/b": rec(2) });
    await updateLedger(file, { "/c": rec(3) });
    await updateLedger(file, { "/a": rec(4) }, ["/b"]);
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(4), "/c": rec(3) });
    const text = lines(file);
    assert.equal(text.length, 4, "a header and one line per update");
    assert.equal(text[0], '{"winfleet-ignition-ledger":2}');
    assert.deepEqual(JSON.parse(text[3] ?? ""), { set: { "/a": rec(4) }, del: ["/b"] }, "only what changed");
  });

  it("writes nothing for an update that changes nothing", async () => {
    const file = fresh();
    await updateLedger(file, { "/a": rec(1) });
    const before = readFileSync(file, "utf8");
    await updateLedger(file, { "/a": rec(1) }, ["/not-recorded"]);
    assert.equal(readFileSync(file, "utf8"), before);
  });

  it("ignores a torn last append, and cuts it off before the next", async () => {
    const file = fresh();
    await updateLedger(file, { "/a": rec(1) });
    const whole = readFileSync(file, "utf8");
    appendFileSync(file, '{"set":{"/b":{"fingerprint":"f'); // a crash in the middle of an append
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(1) });
    await updateLedger(file, { "/c": rec(3) });
    assert.equal(readFileSync(file, "utf8"), `${whole}${JSON.stringify({ set: { "/c": rec(3) } })}\n`);
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(1), "/c": rec(3) });

    // The length kept, not the bytes: a last line of zeros.
    appendFileSync(file, `${"\0".repeat(40)}\n`);
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(1), "/c": rec(3) });
    await updateLedger(file, { "/d": rec(4) });
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(1), "/c": rec(3), "/d": rec(4) });
    assert.equal(lines(file).length, 4, "the zeros were cut off");
  });

  it("refuses a bad line that is not the last, naming the file and the line", async () => {
    const file = fresh();
    await updateLedger(file, { "/a": rec(1) });
    appendFileSync(file, `{"set":{"/b":{"mode":"x"}}}\n${JSON.stringify({ set: { "/c": rec(3) } })}\n`);
    await assert.rejects(readLedger(file), (e: unknown) => {
      assert.ok(e instanceof AgentError);
      assert.match(e.message, new RegExp(`the ledger ${file.replace(/[.]/g, "\\.")} is corrupt: line 3`));
      return true;
    });
  });

  it("reads a ledger of the earlier format, and turns it into a log at its first update", async () => {
    const file = fresh();
    // As the earlier agent wrote it: one document, sorted, indented.
    writeFileSync(file, `${JSON.stringify({ version: 1, files: { "/a": rec(1), "/b": rec(2) } }, null, 2)}\n`);
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(1), "/b": rec(2) });
    await updateLedger(file, { "/c": rec(3) }, ["/a"]);
    assert.equal(lines(file)[0], '{"winfleet-ignition-ledger":2}');
    assert.deepEqual((await readLedger(file)).files, { "/b": rec(2), "/c": rec(3) });
    writeFileSync(file, '{"version": 1, "files": {"/a": {"fingerprint": 1}}}');
    await assert.rejects(readLedger(file), /is corrupt: files\.\/a\.fingerprint/);
  });

  it("compacts itself once it holds more than twice what is live", async () => {
    const file = fresh();
    const many = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`/f${i}`, rec(i)]));
    await updateLedger(file, many);
    const live = statSync(file).size;
    for (let round = 0; round < 30; round++)
      await updateLedger(file, Object.fromEntries(Object.keys(many).map((p, i) => [p, rec(i + round * 1000)])));
    assert.ok(statSync(file).size <= 2.2 * live, `${statSync(file).size} bytes for ${live} live`);
    const got = (await readLedger(file)).files;
    assert.equal(Object.keys(got).length, 200);
    assert.deepEqual(got["/f7"], rec(7 + 29 * 1000));
  });

  it("sees what another writer did to the file since it was read", async () => {
    const file = fresh();
    await updateLedger(file, { "/a": rec(1) });
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(1) });
    appendFileSync(file, `${JSON.stringify({ set: { "/b": rec(2) } })}\n`);
    assert.deepEqual((await readLedger(file)).files, { "/a": rec(1), "/b": rec(2) }, "an append read from its tail");
    writeFileSync(`${file}.new`, `${JSON.stringify({ version: 1, files: { "/z": rec(9) } })}\n`);
    renameSync(`${file}.new`, file);
    assert.deepEqual((await readLedger(file)).files, { "/z": rec(9) }, "a replaced file read afresh");
    await writeLedger(file, { version: 1, files: { "/y": rec(8) } });
    await updateLedger(file, { "/x": rec(7) });
    assert.deepEqual((await readLedger(file)).files, { "/x": rec(7), "/y": rec(8) });
  });
});
