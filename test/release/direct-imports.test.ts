/**
 * The direct-imports plugin, through real esbuild builds run by a real node:
 * a module required on demand that names one export of a folder's index runs
 * only the module behind that export, not the folder; an index that does more
 * than re-export is left as written; the rewritten file keeps its lines.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type * as Esbuild from "esbuild";
import { importExternal } from "../../agent/common/import-external";
import { reExports, rewriteImports } from "../../agent/release/direct-imports";
import { directImports } from "../../agent/release/direct-imports";
import { scratchDir } from "../support";

const dir = scratchDir("winfleet-direct-");

function files(root: string, tree: Record<string, string>): void {
  for (const [path, text] of Object.entries(tree)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

/** Builds `main.ts` of `root` (with or without the plugin), runs it and returns what it printed. */
async function run(root: string, rewrite: boolean): Promise<string> {
  const { default: esbuild } = await importExternal<{ default: typeof Esbuild }>("esbuild");
  const out = join(root, `out-${rewrite}.js`);
  await esbuild.build({
    entryPoints: [join(root, "main.ts")],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile: out,
    plugins: rewrite ? [directImports(root)] : [],
    logLevel: "silent",
  });
  const r = spawnSync(process.execPath, [out], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

// Each module of `lib` says when it runs; `command.ts` is required on demand, as a command's module is.
const tree = (index: string): Record<string, string> => ({
  "lib/index.ts": index,
  "lib/light.ts":
    'console.log("light runs");\nexport const light = (): string => "light";\nexport type Light = string;\n',
  "lib/heavy.ts": 'console.log("heavy runs");\nexport const heavy = (): string => "heavy";\n',
  "cli/command.ts": 'import { type Light, light as named } from "../lib";\nexport const run = (): Light => named();\n',
  "main.ts": 'console.log((require("./cli/command") as { run(): string }).run());\n',
});
const REEXPORTS =
  '/** The folder. */\nexport { light, type Light } from "./light";\nexport {\n  heavy,\n} from "./heavy";\n';

describe("direct imports", () => {
  it("run only the module behind the name imported, where the folder's index would run them all", async () => {
    const root = join(dir, "reexports");
    files(root, tree(REEXPORTS));
    assert.deepEqual((await run(root, false)).split("\n"), ["light runs", "heavy runs", "light"]);
    assert.deepEqual((await run(root, true)).split("\n"), ["light runs", "light"]);
  });

  it("leave an import as written when the index does more than re-export", async () => {
    const root = join(dir, "declares");
    files(root, tree(`${REEXPORTS}export const local = 1;\n`));
    assert.deepEqual((await run(root, true)).split("\n"), ["light runs", "heavy runs", "light"]);
  });

  it("map every value an index re-exports to its module and name, types aside", () => {
    const m = reExports("/r/lib/index.ts", 'export { a, b as c, type T } from "./x";\nexport type { U } from "./y";\n');
    assert.deepEqual(Object.fromEntries(m ?? []), {
      a: { file: "/r/lib/x", name: "a" },
      c: { file: "/r/lib/x", name: "b" },
    });
    assert.equal(reExports("/r/lib/index.ts", 'export * from "./x";\n'), undefined);
  });

  it("keep the rewritten file's line count, and an import naming anything unknown as written", () => {
    const index = reExports("/r/lib/index.ts", 'export { a } from "./x";\nexport { b } from "./y";\n');
    const indexOf = (d: string): typeof index => (d === "/r/lib" ? index : undefined);
    const text = 'import {\n  a,\n  b as bee,\n  type T,\n} from "../lib";\nconst z = 1;\n';
    const out = rewriteImports("/r/cli/c.ts", text, indexOf);
    assert.equal(out.split("\n").length, text.split("\n").length);
    assert.match(
      out,
      /^import \{ a \} from "\.\.\/lib\/x"; import \{ b as bee \} from "\.\.\/lib\/y"; import \{ type T \} from "\.\.\/lib";\n/,
    );
    assert.ok(out.endsWith("\nconst z = 1;\n"));
    const unknown = 'import { a, missing } from "../lib";\n';
    assert.equal(rewriteImports("/r/cli/c.ts", unknown, indexOf), unknown);
  });
});
