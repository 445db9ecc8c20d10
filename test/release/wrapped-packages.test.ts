/**
 * The wrapped-packages plugin, through real esbuild builds run by a real node:
 * an ES module package becomes one CommonJS closure that runs when first
 * required (not when the bundle starts), once, shared by every importer, and
 * whose functions are no longer hoisted to the bundle's top level.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type * as Esbuild from "esbuild";
import { importExternal } from "../../agent/common/import-external";
import { wrappedPackages } from "../../agent/release/wrapped-packages";
import { scratchDir } from "../support";

const dir = scratchDir("winfleet-wrapped-");

function files(tree: Record<string, string>): void {
  for (const [path, text] of Object.entries(tree)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

async function build(wrap: boolean): Promise<{ out: string; text: string }> {
  const { default: esbuild } = await importExternal<{ default: typeof Esbuild }>("esbuild");
  const out = join(dir, `out-${wrap}.js`);
  await esbuild.build({
    entryPoints: [join(dir, "main.js")],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile: out,
    plugins: wrap ? [wrappedPackages(["schemas"])] : [],
    logLevel: "silent",
  });
  const r = spawnSync(process.execPath, [out], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return { out: r.stdout.trim(), text: readFileSync(out, "utf8") };
}

describe("wrapped packages", () => {
  it("run the package once, when first required, with one copy of its classes for every importer", async () => {
    files({
      "node_modules/schemas/package.json": JSON.stringify({
        name: "schemas",
        type: "module",
        exports: { ".": "./index.js" },
      }),
      "node_modules/schemas/index.js":
        "globalThis.schemaRuns = (globalThis.schemaRuns ?? 0) + 1;\nexport class Schema {}\nexport function hoistedHelperOfTheSchemasPackage() { return new Schema(); }\nexport * as ns from './ns.js';\n",
      "node_modules/schemas/ns.js": "export const inner = 'inner';\n",
      "a.js":
        "import { hoistedHelperOfTheSchemasPackage } from 'schemas';\nexport const made = () => hoistedHelperOfTheSchemasPackage();\n",
      "b.js":
        "import { Schema, ns } from 'schemas';\nexport const isSchema = (x) => x instanceof Schema;\nexport const inner = ns.inner;\n",
      "main.js":
        "const before = globalThis.schemaRuns ?? 0;\nconst a = require('./a.js');\nconst b = require('./b.js');\nconsole.log(JSON.stringify({ before, after: globalThis.schemaRuns, same: b.isSchema(a.made()), inner: b.inner }));\n",
    });
    const wrapped = await build(true);
    assert.deepEqual(JSON.parse(wrapped.out), { before: 0, after: 1, same: true, inner: "inner" });
    // Not hoisted: the package's function sits inside its module's closure, not at the bundle's top level.
    assert.match(wrapped.text, /^ {4,}function hoistedHelperOfTheSchemasPackage\d*\(/m);
    const plain = await build(false);
    assert.deepEqual(JSON.parse(plain.out), { before: 0, after: 1, same: true, inner: "inner" });
    assert.match(
      plain.text,
      /^function hoistedHelperOfTheSchemasPackage\d*\(/m,
      "esbuild hoists it without the plugin (what the plugin is for)",
    );
  });
});
