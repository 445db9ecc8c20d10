/**
 * scripts/check-links.mjs, which `npm run lint` runs: every relative link in the Markdown resolves
 * to a file inside the tree and, with a fragment, to a heading of that file; links to other sites
 * and links inside code are left alone. Run for real on small trees.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { scratchDir } from "../support";

const SCRIPT = join(__dirname, "..", "..", "scripts", "check-links.mjs");
const scratch = scratchDir("check-links-");
let n = 0;

/** A tree of Markdown files; returns its root. */
function tree(files: Record<string, string>): string {
  const root = join(scratch, `t${++n}`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(root, name, ".."), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  return root;
}

const check = (root: string, ...files: string[]) =>
  spawnSync(process.execPath, [SCRIPT, "--root", root, ...files.map((f) => join(root, f))], { encoding: "utf8" });

describe("check-links", () => {
  it("passes the repository's own Markdown", () => {
    const r = spawnSync(process.execPath, [SCRIPT], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
  });

  it("passes links to files and headings, other sites, and links inside code", () => {
    const root = tree({
      "README.md":
        "# Top\n[a](docs/a.md) [b](docs/a.md#the-part-two) [c](#top) [d](https://example.com/x.md)\n`[e](nope.md)`\n```\n[f](nope.md)\n```\n",
      "docs/a.md": "# A\n## The part: two\n[up](../README.md)\n",
    });
    const r = check(root, "README.md", "docs/a.md");
    assert.equal(r.status, 0, r.stderr);
  });

  it("refuses a missing file, a missing heading and a path out of the tree, naming each", () => {
    const root = tree({ "README.md": "# Top\n[a](docs/gone.md)\n[b](#nowhere)\n[c](../outside.md)\n" });
    const r = check(root, "README.md");
    assert.equal(r.status, 1);
    assert.match(r.stderr, /README\.md:2: docs\/gone\.md: no such file/);
    assert.match(r.stderr, /README\.md:3: #nowhere: README\.md has no heading #nowhere/);
    assert.match(r.stderr, /README\.md:4: \.\.\/outside\.md points outside the repository/);
    assert.match(r.stderr, /3 broken link\(s\)/);
  });
});
