/**
 * scripts/check-test-layout.mjs, the rule for where tests live (docs/testing.md):
 * the repository follows it, and each way of breaking it fails the real script,
 * naming the file and the part of the rule, on a small tree made for the case.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { scratchDir } from "../support";

const ROOT = join(__dirname, "..", "..");
const SCRIPT = join(ROOT, "scripts", "check-test-layout.mjs");
const scratch = scratchDir("test-layout-");
let trees = 0;

const check = (root?: string) =>
  spawnSync(process.execPath, [SCRIPT, ...(root ? [root] : [])], { encoding: "utf8", cwd: ROOT });

/**
 * A tree that follows the rule (a module and its unit test, a folder it imports, a suite), with `files` added or
 * replaced.
 */
function tree(files: Record<string, string>): string {
  const root = join(scratch, `tree-${trees++}`);
  const base: Record<string, string> = {
    "agent/common/errors.ts": "export class Oops extends Error {}\n",
    "agent/ignition/parse.ts":
      'import { Oops } from "../common/errors";\nexport const parse = (s: string): string => { if (!s) throw new Oops(); return s; };\n',
    "agent/ignition/parse.test.ts":
      'import assert from "node:assert/strict";\nimport { it } from "node:test";\nimport { Oops } from "../common/errors";\nimport { parse } from "./parse";\nit("parses", () => { assert.equal(parse("a"), "a"); assert.throws(() => parse(""), Oops); });\n',
    "test/ignition/apply.test.ts":
      'import { spawnSync } from "node:child_process";\nimport { parse } from "../../agent/ignition/parse";\nimport { tempDir } from "../support";\n',
    "test/support/index.ts": 'export const tempDir = (): string => "";\n',
  };
  for (const [rel, text] of Object.entries({ ...base, ...files })) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}

/** Runs the check on a tree with `files`, and asserts it fails naming `rel` and `why`. */
function refuses(files: Record<string, string>, rel: string, why: RegExp): void {
  const r = check(tree(files));
  assert.equal(r.status, 1, `${rel} passed:\n${r.stdout}`);
  assert.match(r.stderr, new RegExp(`^${rel.replace(/[.]/g, "\\.")}: .*${why.source}`, "m"));
}

describe("where tests live", () => {
  it("the repository follows the rule", () => {
    const r = check();
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\d+ test files where the rule puts them$/m);
  });

  it("passes a tree that follows it", () => {
    const r = check(tree({}));
    assert.equal(r.status, 0, r.stderr);
  });

  it("refuses a test beside the code that starts a process or a server", () => {
    refuses(
      {
        "agent/ignition/parse.test.ts":
          'import { spawnSync } from "node:child_process";\nimport { parse } from "./parse";\n',
      },
      "agent/ignition/parse.test.ts",
      /imports node:child_process: a test that starts processes or servers/,
    );
    refuses(
      { "agent/ignition/parse.test.ts": 'import { createServer } from "http";\nimport { parse } from "./parse";\n' },
      "agent/ignition/parse.test.ts",
      /imports http: a test that starts processes or servers/,
    );
  });

  it("refuses a test beside the code that crosses into a folder its code does not import", () => {
    refuses(
      {
        "agent/lifecycle/plan.ts": "export const plan = 1;\n",
        "agent/ignition/parse.test.ts": 'import { plan } from "../lifecycle/plan";\nimport { parse } from "./parse";\n',
      },
      "agent/ignition/parse.test.ts",
      /from agent\/lifecycle, which no module of agent\/ignition imports/,
    );
  });

  it("counts a folder's index as that folder", () => {
    const index = {
      "agent/common/index.ts": 'export { Oops } from "./errors";\n',
      "agent/lifecycle/index.ts": "export const plan = 1;\n",
    };
    const throughIndex = 'import { Oops } from "../common";\nimport { parse } from "./parse";\n';
    const r = check(tree({ ...index, "agent/ignition/parse.test.ts": throughIndex }));
    assert.equal(r.status, 0, r.stderr);
    refuses(
      { ...index, "agent/ignition/parse.test.ts": 'import { plan } from "../lifecycle";\n' },
      "agent/ignition/parse.test.ts",
      /from agent\/lifecycle, which no module/,
    );
  });

  it("refuses a test beside the code that uses the suites' support", () => {
    refuses(
      {
        "agent/ignition/parse.test.ts":
          'import { tempDir } from "../../test/support";\nimport { parse } from "./parse";\n',
      },
      "agent/ignition/parse.test.ts",
      /imports only product code/,
    );
  });

  it("refuses a test beside the code with no module of its name", () => {
    refuses(
      { "agent/ignition/parsing.test.ts": 'import { parse } from "./parse";\n' },
      "agent/ignition/parsing.test.ts",
      /named after the module it tests, and there is no agent\/ignition\/parsing\.ts/,
    );
  });

  it("refuses a test anywhere else, deeper under test/, or in test/support", () => {
    refuses({ "scripts/tool.test.ts": "" }, "scripts/tool.test.ts", /a test lives beside a module/);
    refuses(
      { "test/ignition/deep/apply.test.ts": "" },
      "test/ignition/deep/apply.test.ts",
      /test\/<area>\/<name>\.test\.ts/,
    );
    refuses({ "test/support/wait.test.ts": "" }, "test/support/wait.test.ts", /not in test\/support/);
  });

  it("refuses importing a test file", () => {
    // Spelled in two parts so that this file does not import a test file in the check's eyes.
    const testFile = "../../agent/ignition/parse" + ".test";
    refuses(
      { "test/ignition/other.test.ts": `import { x } from "${testFile}";\n` },
      "test/ignition/other.test.ts",
      /a test file: move what it shares to test\/support/,
    );
  });
});
