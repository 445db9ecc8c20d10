/**
 * An esbuild plugin that bundles a package on its own, as one CommonJS module,
 * before the main bundle takes it in. esbuild hoists an ES module's top-level
 * functions and export tables to the top of a bundle, where every start
 * creates them and V8's code cache must carry them, whether or not a command
 * uses the package; a CommonJS module stays inside its closure until first
 * required. zod is the case: 300 KB of ES modules that `--version` never runs.
 *
 * A package wrapped so must be imported by its bare name only (never by a
 * subpath), or the bundle would hold two copies whose classes differ.
 */
import type { Plugin } from "esbuild";

const NAMESPACE = "wrapped-package";

/** The plugin for `packages`, each bundled from `resolveDir`'s node_modules with `plugins`. */
export function wrappedPackages(packages: readonly string[], plugins: readonly Plugin[] = []): Plugin {
  const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const filter = new RegExp(`^(${packages.map(escape).join("|")})$`);
  return {
    name: "wrapped-packages",
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: NAMESPACE, pluginData: args.resolveDir }));
      b.onLoad({ filter: /.*/, namespace: NAMESPACE }, async (args) => {
        const resolveDir = args.pluginData as string;
        // A build of its own, without this plugin: nothing here resolves back into it.
        const r = await b.esbuild.build({
          stdin: { contents: `export * from ${JSON.stringify(args.path)};\n`, resolveDir, loader: "js" },
          bundle: true,
          write: false,
          platform: "node",
          format: "cjs",
          target: b.initialOptions.target,
          charset: "ascii",
          // Inline, so the main build's source map reaches the package's own files.
          sourcemap: "inline",
          logLevel: "silent",
          plugins: [...plugins],
        });
        const out = r.outputFiles[0];
        if (!out) throw new Error(`esbuild produced nothing for ${args.path}`);
        return { contents: out.text, loader: "js", resolveDir };
      });
    },
  };
}
