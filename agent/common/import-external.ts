/**
 * `import()` of a package kept out of the bundles: tree-sitter's ES module
 * grammar, and esbuild. Two things differ from a plain `import()` in a bundle:
 * - the package is looked up from the checkout (agent/common/project-root.ts),
 *   not from where the bundle lies, which may be outside it;
 * - a bundle run through the code cache is a `vm.Script`, where Node gives
 *   `import()` no loader (and drops one given with cached bytecode), so the
 *   bundle's entry, a module Node loaded itself, registers an `import()` of its
 *   own under {@link IMPORT_EXTERNAL}, which this uses when it is there.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { projectRoot } from "./project-root";

/** The global the bundle entry sets to a working `import()`. */
export const IMPORT_EXTERNAL = Symbol.for("winfleet.importExternal");

type Importer = (specifier: string) => Promise<unknown>;

/** Imports the package (or package file) `specifier` as the checkout's node_modules hold it. */
export function importExternal<T>(specifier: string): Promise<T> {
  let target = specifier;
  try {
    target = pathToFileURL(createRequire(join(projectRoot(), "package.json")).resolve(specifier)).href;
  } catch {
    // Not in the checkout: let import() look where it would, and say what is missing.
  }
  const viaEntry = (globalThis as { [IMPORT_EXTERNAL]?: Importer })[IMPORT_EXTERNAL];
  return (viaEntry ? viaEntry(target) : import(target)) as Promise<T>;
}
