/**
 * A bundle's text reaches V8 as written: read as Latin-1 when it is ASCII (the
 * fast path), as UTF-8 otherwise, through the code-cache path of runBundle.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { runBundle } from "./code-cache";

const scratch = mkdtempSync(join(tmpdir(), "winfleet-code-cache-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const seen = globalThis as { winfleetCodeCacheTest?: string };

describe("runBundle", () => {
  // Written as the file's own text: an escape in an ASCII file, the characters themselves in a UTF-8 one.
  const cases = [
    { what: "ASCII", source: 'globalThis.winfleetCodeCacheTest = "plain \\u00e9 escaped";\n', expected: "plain \u00e9 escaped" },
    { what: "UTF-8", source: 'globalThis.winfleetCodeCacheTest = "h\u00e9llo \u2713 \u{1f680}";\n', expected: "h\u00e9llo \u2713 \u{1f680}" },
  ];
  for (const { what, source, expected } of cases) {
    it(`runs a bundle written in ${what} with its strings intact`, () => {
      const lib = join(scratch, `${what}.js`);
      writeFileSync(lib, source, "utf8");
      // The test runner's loader turns source maps on, which sends runBundle to Node's own loader.
      const maps = process.sourceMapsEnabled;
      process.setSourceMapsEnabled(false);
      try {
        assert.equal(runBundle(lib, `test-${what}`, { WINFLEET_CODE_CACHE: join(scratch, "cache") }), "missing", "through the code-cache path");
      } finally {
        process.setSourceMapsEnabled(maps);
      }
      assert.equal(seen.winfleetCodeCacheTest, expected);
    });
  }
});
