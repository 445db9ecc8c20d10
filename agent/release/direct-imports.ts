/**
 * An esbuild plugin that binds each import of a folder's index.ts to the
 * module the index re-exports it from. Folders are imported through their
 * index (scripts/check-layers.mjs), but in a bundle a module required on
 * demand (a command's module, see agent/cli/lazy-commands.ts) runs everything
 * it imports when first required, and an index imports its whole folder: one
 * name from agent/lifecycle would start the engine, the shells and their
 * dependencies. Rewritten, a command runs only the modules it names, and what
 * those import.
 *
 * Only `import { a, b as c } from "<folder>"` is rewritten, and only when the
 * index re-exports every value it names with `export { ... } from "./file"`;
 * anything else is left as written. The rewritten statement keeps its line, so
 * the source map still points at the source.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import type { Plugin } from "esbuild";

/** Where an index's exported name comes from. */
interface Origin {
  readonly file: string;
  readonly name: string;
}

const IMPORT = /^import\s+\{([^}]*)\}\s*from\s*"(\.{1,2}(?:\/[^"]*)?)";/gm;
const RE_EXPORT = /^export\s+(type\s+)?\{([^}]*)\}\s*from\s*"(\.\/[^"]+)";/gm;

function specifiers(list: string): string[] {
  return list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The value names `index` re-exports, each with its module (undefined when the index does anything else). */
export function reExports(index: string, text: string): Map<string, Origin> | undefined {
  const out = new Map<string, Origin>();
  // Whatever is not a re-export (a declaration, `export *`, a side effect) keeps the whole index as it is.
  const rest = text
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/^\s*\/\/.*$/gm, "")
    .replace(RE_EXPORT, "")
    .trim();
  if (rest !== "") return undefined;
  for (const m of text.matchAll(RE_EXPORT)) {
    if (m[1]) continue; // `export type { ... }`: nothing at run time
    const file = resolve(dirname(index), m[3] ?? "");
    for (const spec of specifiers(m[2] ?? "")) {
      if (spec.startsWith("type ")) continue;
      const [name, as] = spec.split(/\s+as\s+/) as [string, string | undefined];
      out.set(as ?? name, { file, name });
    }
  }
  return out;
}

/** `file`'s text with its imports of folder indexes bound to the modules behind them. */
export function rewriteImports(
  file: string,
  text: string,
  indexOf: (dir: string) => Map<string, Origin> | undefined,
): string {
  return text.replace(IMPORT, (statement, list: string, from: string) => {
    const exports = indexOf(resolve(dirname(file), from));
    if (!exports) return statement;
    const byModule = new Map<string, string[]>();
    const types: string[] = [];
    for (const spec of specifiers(list)) {
      if (spec.startsWith("type ")) {
        types.push(spec);
        continue;
      }
      const [name, as] = spec.split(/\s+as\s+/) as [string, string | undefined];
      const origin = exports.get(name);
      if (!origin) return statement;
      const specs = byModule.get(origin.file) ?? [];
      specs.push(origin.name === (as ?? name) ? origin.name : `${origin.name} as ${as ?? name}`);
      byModule.set(origin.file, specs);
    }
    const lines = [...byModule].map(([target, specs]) => {
      const rel = relative(dirname(file), target).split(sep).join("/").replace(/\.ts$/, "");
      return `import { ${specs.join(", ")} } from "${rel.startsWith(".") ? rel : `./${rel}`}";`;
    });
    if (types.length > 0) lines.push(`import { ${types.join(", ")} } from "${from}";`);
    // As many lines as the statement had, so every later line keeps its number.
    const breaks = statement.split("\n").length - 1;
    return lines.join(" ") + "\n".repeat(breaks);
  });
}

/** The plugin: rewrites the TypeScript sources below `sourceDir`; `consulted` collects the index files read. */
export function directImports(sourceDir: string, consulted: Set<string> = new Set()): Plugin {
  const indexes = new Map<string, Map<string, Origin> | undefined>();
  const indexOf = (dir: string): Map<string, Origin> | undefined => {
    if (!dir.startsWith(sourceDir + sep)) return undefined;
    if (!indexes.has(dir)) {
      const index = join(dir, "index.ts");
      let text: string | undefined;
      try {
        text = readFileSync(index, "utf8");
        consulted.add(index);
      } catch {
        text = undefined; // not a folder with an index: the import stays as written
      }
      indexes.set(dir, text === undefined ? undefined : reExports(index, text));
    }
    return indexes.get(dir);
  };
  return {
    name: "direct-imports",
    setup(b) {
      b.onLoad({ filter: /\.ts$/, namespace: "file" }, (args) => {
        if (!args.path.startsWith(sourceDir + sep) || args.path.endsWith(`${sep}index.ts`)) return undefined;
        const text = readFileSync(args.path, "utf8");
        return { contents: rewriteImports(args.path, text, indexOf), loader: "ts" };
      });
    },
  };
}
