/**
 * components/ sits below infra/: the program maps the stack config onto each
 * component's own Args, so no component imports from infra/ (which imports
 * them). Tests may, to run a component under a shipped stack.
 */
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";

describe("components/", () => {
  it("imports nothing from infra/ outside its tests", () => {
    const offenders = readdirSync(__dirname)
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .filter((f) => /from\s+["']\.\.\/infra\//.test(readFileSync(join(__dirname, f), "utf8")));
    assert.deepEqual(offenders, []);
  });
});
