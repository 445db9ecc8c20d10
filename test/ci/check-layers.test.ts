/**
 * scripts/check-layers.mjs, which `npm run lint` runs: on this repository it
 * passes; on small trees it refuses an import into a layer above (naming the
 * cycle it closes), an import past another folder's index.ts, and a folder
 * with no layer, while tests may import any internals.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";

const ROOT = join(__dirname, "..", "..");
const SCRIPT = join(ROOT, "scripts", "check-layers.mjs");
const scratch = mkdtempSync(join(tmpdir(), "check-layers-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

let trees = 0;
/** A tree of `files` (path → text) under the scratch directory; returns its root. */
function treeOf(files: Record<string, string>): string {
  const root = join(scratch, String((trees += 1)));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

const check = (root?: string) =>
  spawnSync(process.execPath, [SCRIPT, ...(root ? ["--root", root] : [])], { encoding: "utf8", cwd: ROOT });

/** A tree where agent/cli uses agent/common through its index, as it should. */
const GOOD = {
  "agent/common/index.ts": 'export { twice } from "./math";\n',
  "agent/common/math.ts": "export const twice = (n: number): number => n * 2;\n",
  "agent/cli/main.ts": 'import { twice } from "../common";\nexport const four = twice(2);\n',
  "agent/cli/main.test.ts": 'import { twice } from "../common/math";\nvoid twice;\n',
};

describe("check-layers", () => {
  it("passes this repository", () => {
    const r = check();
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /no cycle/);
  });

  it("passes a tree that imports downwards through indexes, tests reaching into internals", () => {
    const r = check(treeOf(GOOD));
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });

  it("refuses an import into a layer above, naming the file and the cycle it closes", () => {
    const r = check(
      treeOf({
        ...GOOD,
        "agent/common/index.ts": 'export { twice } from "./math";\nexport { four } from "../cli/main";\n',
      }),
    );
    assert.equal(r.status, 1);
    assert.match(r.stderr, /folders import each other in a cycle: agent\/cli, agent\/common/);
    assert.match(
      r.stderr,
      /agent\/common\/index\.ts: agent\/common \(layer 1\) imports agent\/cli \(layer 10\) through "\.\.\/cli\/main"/,
    );
  });

  it("refuses an import past another folder's index.ts", () => {
    const r = check(
      treeOf({
        ...GOOD,
        "agent/cli/other.ts": 'import { twice } from "../common/math";\nexport const six = twice(3);\n',
      }),
    );
    assert.equal(r.status, 1);
    assert.match(
      r.stderr,
      /agent\/cli\/other\.ts: imports "\.\.\/common\/math", past agent\/common's public index\.ts/,
    );
  });

  it("refuses a folder that has no layer yet", () => {
    const r = check(
      treeOf({
        ...GOOD,
        "agent/extra/thing.ts": 'import { twice } from "../common";\nexport const eight = twice(4);\n',
      }),
    );
    assert.equal(r.status, 1);
    assert.match(r.stderr, /agent\/extra: not in LAYERS/);
  });
});
