/**
 * `npm run build`: esbuild turns each command line into one JavaScript file
 * with a source map, needing no node_modules and no TypeScript at run time:
 * the agent's (what ships to a node) and the operator's `winfleet`.
 *
 * Layout (relative to the output directory, `dist/` by default):
 * - `agent/` — `package.json` (name and version, which the agent reports),
 *   `lib/winfleet-agent.js` (+ `.map`), the bundle, and `bin/winfleet-agent.js`,
 *   a small entry that runs it through V8's code cache (code-cache.ts) — the
 *   path the node bootstrap and the service definitions run as
 *   `current/bin/winfleet-agent.js`;
 * - `winfleet/` — the same for the operator's command line, whose `render`
 *   (Pulumi with the Azure and Kubernetes providers, 30 MB once bundled) is a
 *   second file, `lib/winfleet-render.js`, required only when `render` runs.
 *   The operator bundle works from a checkout (stacks/ and content/ are read
 *   from it, `local up` starts bin/winfleet-agent.js); the only packages it
 *   takes from node_modules are native ones, and only when a command needs
 *   them (esbuild for `release`, tree-sitter for PowerShell checks);
 * - `.build/agent.json` — what the bundle was built from (size and mtime of
 *   every source file, and of node_modules/.package-lock.json for the
 *   packages), which the checkout's launcher compares with the sources so a
 *   stale bundle is refused rather than run in place of a change.
 *
 * Each output directory is staged and renamed into place, so a failed build
 * leaves the previous one as it was.
 */
import { chmod, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import type * as Esbuild from "esbuild";
import type { BuildOptions, Metafile, Plugin } from "esbuild";
import { canonicalJson, importExternal, projectRoot } from "../common";
import { BUNDLE_HEAD, BUNDLE_TAIL } from "./code-cache";
import { directImports } from "./direct-imports";
import { lazyBuiltins } from "./lazy-builtins";
import { wrappedPackages } from "./wrapped-packages";

/** One bundle the build makes. */
export interface BundleSpec {
  /** The directory under the output and the name of its build record. */
  readonly name: "agent" | "winfleet";
  /** The TypeScript entry, relative to the repository. */
  readonly entry: string;
  /** The entry people and services run, relative to the bundle's directory. */
  readonly bin: string;
  /** The bundle itself, relative to the bundle's directory. */
  readonly lib: string;
  /** Packages left out of the bundle and required at run time (only where a command needs them). */
  readonly external: readonly string[];
  /**
   * Modules bundled into files of their own beside `lib` (each with what it
   * imports), which the main file requires at run time when a command needs
   * them. A part must not hand objects whose class matters back to the main
   * file: each file has its own copy of the classes both use.
   */
  readonly parts: readonly { readonly entry: string; readonly lib: string }[];
  /** Whether the bundle runs from a checkout (and so is told where that is). */
  readonly inCheckout: boolean;
}

/**
 * Left out of every bundle: native bindings cannot live in a JavaScript file
 * (only PowerShell syntax checks load tree-sitter), and grpc-js requires
 * @grpc/proto-loader (with protobufjs, 180 KB) only to serve channelz and ORCA,
 * which winfleet never registers.
 */
const EXTERNAL = ["tree-sitter", "tree-sitter-powershell", "@grpc/proto-loader", "esbuild"];

/** The agent bundle: everything inside, except what {@link EXTERNAL} names. */
export const AGENT_BUNDLE: BundleSpec = {
  name: "agent",
  entry: "agent/cli/agent-main.ts",
  bin: "bin/winfleet-agent.js",
  lib: "lib/winfleet-agent.js",
  external: EXTERNAL,
  parts: [],
  inCheckout: false,
};

/** The operator bundle: `render` and the Pulumi it loads in a second file. */
export const OPERATOR_BUNDLE: BundleSpec = {
  name: "winfleet",
  entry: "agent/cli/winfleet-main.ts",
  bin: "bin/winfleet.js",
  lib: "lib/winfleet.js",
  external: EXTERNAL,
  parts: [{ entry: "agent/cli/render-run.ts", lib: "lib/winfleet-render.js" }],
  inCheckout: true,
};

/** Every bundle `npm run build` makes. */
export const BUNDLES: readonly BundleSpec[] = [AGENT_BUNDLE, OPERATOR_BUNDLE];

/** The code-cache entry every bundle's bin/ file is made from. */
const ENTRY = "agent/release/bundle-entry.ts";
/** Files outside the module graphs that still change what a build produces. */
const EXTRA_INPUTS = ["package.json", "tsconfig.json", "agent/release/build.ts", "node_modules/.package-lock.json"];

/** What a bundle was built from: the size and modification time of each input. */
export interface BuildRecord {
  readonly format: 1;
  readonly bundle: string;
  readonly inputs: Readonly<Record<string, { readonly size: number; readonly mtimeMs: number }>>;
}

/** What {@link buildBundles} made. */
export interface BuildResult {
  readonly outDir: string;
  readonly version: string;
  readonly bundles: readonly {
    readonly name: string;
    readonly lib: string;
    readonly bytes: number;
    readonly sources: number;
  }[];
}

// zod re-exports all of its 40-odd locales as `z.locales` (300 KB in a bundle);
// winfleet's messages are English, the locale zod configures by default.
const zodEnglishOnly: Plugin = {
  name: "zod-english-only",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${sep}node_modules${sep}zod${sep}`)
        ? { path: join(dirname(args.importer), "..", "locales"), namespace: "zod-locales" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "zod-locales" }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: args.path,
      loader: "js",
    }));
  },
};

const COMMON: BuildOptions = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  // Whitespace and syntax only: names stay readable in stack traces without the map.
  minifyWhitespace: true,
  minifySyntax: true,
  charset: "ascii",
  logLevel: "silent",
};

/**
 * Throws unless `file` is pure ASCII. esbuild's `charset: "ascii"` escapes
 * other characters in strings and names but leaves regular expression
 * literals as written, where one slips through; a bundle is kept ASCII so it
 * reads the same under any encoding and V8 holds it at one byte a character.
 */
export async function assertAscii(file: string): Promise<void> {
  const text = (await readFile(file)).toString("latin1");
  const at = text.search(/[\x80-\xff]/);
  if (at < 0) return;
  const line = text.slice(0, at).split("\n").length;
  const context = Buffer.from(text.slice(Math.max(0, at - 40), at + 20), "latin1").toString("utf8");
  throw new Error(
    `${file}:${line}: a non-ASCII character at byte ${at}, in ${JSON.stringify(context)}: write it as a \\u escape in the source (esbuild leaves regular expression literals as they are)`,
  );
}

/** Makes each of `parts` (other than `self`) an external require of its own file, relative to `fromLib`. */
function splitParts(repo: string, spec: BundleSpec, fromLib: string, self: string): Plugin {
  const others = spec.parts.filter((p) => p.entry !== self);
  return {
    name: "split-parts",
    setup(b) {
      b.onResolve({ filter: /^\./ }, (args) => {
        const target = join(args.resolveDir, args.path);
        const part = others.find((p) => join(repo, p.entry).replace(/\.ts$/, "") === target.replace(/\.ts$/, ""));
        if (!part) return undefined;
        const rel = relative(dirname(fromLib), part.lib).split(sep).join("/");
        return { path: rel.startsWith(".") ? rel : `./${rel}`, external: true };
      });
    },
  };
}

function libOptions(
  repo: string,
  spec: BundleSpec,
  entry: string,
  lib: string,
  outDir: string,
  indexes: Set<string>,
): BuildOptions {
  // The checkout, relative to where the bundle will lie (for agent/common/project-root.ts).
  const root =
    relative(join(outDir, spec.name, dirname(lib)), repo)
      .split(sep)
      .join("/") || ".";
  return {
    ...COMMON,
    absWorkingDir: repo,
    entryPoints: [join(repo, entry)],
    outfile: join(outDir, spec.name, lib),
    sourcemap: "linked",
    // Run as one function of CommonJS's parameters, whether required or compiled by the bundle's entry (code-cache.ts).
    banner: { js: BUNDLE_HEAD },
    footer: { js: BUNDLE_TAIL },
    legalComments: "eof",
    external: [...spec.external],
    metafile: true,
    ...(spec.inCheckout ? { define: { WINFLEET_PROJECT_ROOT: JSON.stringify(root) } } : {}),
    plugins: [
      lazyBuiltins(),
      wrappedPackages(["zod"], [zodEnglishOnly]),
      splitParts(repo, spec, lib, entry),
      directImports(join(repo, "agent"), indexes),
    ],
  };
}

function binOptions(repo: string, spec: BundleSpec, outFile: string): BuildOptions {
  return {
    ...COMMON,
    absWorkingDir: repo,
    entryPoints: [join(repo, ENTRY)],
    outfile: outFile,
    banner: { js: "#!/usr/bin/env node" },
    define: { WINFLEET_BUNDLE_LIB: JSON.stringify(relative(dirname(spec.bin), spec.lib).split(sep).join("/")) },
    metafile: true,
    plugins: [lazyBuiltins()],
  };
}

async function record(
  repo: string,
  spec: BundleSpec,
  metas: readonly Metafile[],
  indexes: ReadonlySet<string>,
): Promise<BuildRecord> {
  const inputs: Record<string, { size: number; mtimeMs: number }> = {};
  // Packages are tracked through npm's record of the installed tree, one file instead of hundreds.
  const files = metas
    .flatMap((m) => Object.keys(m.inputs))
    .filter((f) => !f.includes(":") && !f.split(/[\\/]/).includes("node_modules"))
    // The folder indexes imports were bound through: no longer in the bundle, they still decide what is.
    .concat([...indexes].map((f) => relative(repo, f)));
  for (const rel of [...new Set([...files, ...EXTRA_INPUTS])].sort()) {
    const s = await stat(join(repo, rel)).catch(() => undefined);
    if (s) inputs[rel.split(sep).join("/")] = { size: s.size, mtimeMs: s.mtimeMs };
  }
  return { format: 1, bundle: `${spec.name}/${spec.bin}`, inputs };
}

/** Replaces `target` with `staged` in two renames (the old one is removed last). */
async function swapIn(staged: string, target: string): Promise<void> {
  const old = `${target}.old-${process.pid}`;
  await rm(old, { recursive: true, force: true });
  await rename(target, old).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== "ENOENT") throw e;
  });
  await rename(staged, target);
  await rm(old, { recursive: true, force: true });
}

/**
 * Builds the bundles of the repository at `repo` into `outDir` (all of
 * {@link BUNDLES} unless `only` names some).
 */
export async function buildBundles(
  repo: string,
  outDir = join(repo, "dist"),
  only: readonly BundleSpec["name"][] = BUNDLES.map((b) => b.name),
): Promise<BuildResult> {
  // Loaded here: esbuild is a native binary the operator bundle keeps external.
  const { default: esbuild } = await importExternal<{ default: typeof Esbuild }>("esbuild");
  const pkg = JSON.parse(await readFile(join(repo, "package.json"), "utf8")) as {
    name: string;
    version: string;
    description?: string;
    license?: string;
  };
  await mkdir(outDir, { recursive: true });
  const staging = await mkdtemp(join(outDir, ".staging-"));
  try {
    const made: { name: string; lib: string; bytes: number; sources: number }[] = [];
    const records: [string, BuildRecord][] = [];
    const specs = BUNDLES.filter((b) => only.includes(b.name));
    for (const spec of specs) {
      const lib = join(staging, spec.name, spec.lib);
      const bin = join(staging, spec.name, spec.bin);
      const metas: Metafile[] = [];
      const indexes = new Set<string>();
      for (const [entry, file] of [
        [spec.entry, spec.lib],
        ...spec.parts.map((p) => [p.entry, p.lib] as const),
      ] as const) {
        // Built for where it will lie (`outDir`), written to the staging copy.
        const result = await esbuild.build({
          ...libOptions(repo, spec, entry, file, outDir, indexes),
          outfile: join(staging, spec.name, file),
        });
        if (!result.metafile) throw new Error(`esbuild could not bundle ${entry}`);
        await assertAscii(join(staging, spec.name, file));
        metas.push(result.metafile);
      }
      const binResult = await esbuild.build(binOptions(repo, spec, bin));
      if (!binResult.metafile) throw new Error(`esbuild could not bundle ${spec.bin}`);
      await assertAscii(bin);
      metas.push(binResult.metafile);
      await chmod(bin, 0o755);
      // The version the bundle reports (agent/version.ts reads the nearest winfleet package.json).
      const manifest = {
        name: pkg.name,
        version: pkg.version,
        description: pkg.description,
        license: pkg.license,
        private: true,
      };
      await writeFile(join(staging, spec.name, "package.json"), `${canonicalJson(manifest)}\n`);
      const rec = await record(repo, spec, metas, indexes);
      records.push([spec.name, rec]);
      made.push({
        name: spec.name,
        lib: join(outDir, spec.name, spec.lib),
        bytes: (await stat(lib)).size,
        sources: Object.keys(rec.inputs).length,
      });
    }
    await mkdir(join(staging, ".build"));
    for (const [name, rec] of records)
      await writeFile(join(staging, ".build", `${name}.json`), `${canonicalJson(rec)}\n`);
    for (const spec of specs) await swapIn(join(staging, spec.name), join(outDir, spec.name));
    // Build records sit side by side: replace only those of the bundles made here.
    await mkdir(join(outDir, ".build"), { recursive: true });
    for (const [name] of records)
      await rename(join(staging, ".build", `${name}.json`), join(outDir, ".build", `${name}.json`));
    return { outDir, version: pkg.version, bundles: made };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The repository this module belongs to (its sources or its operator bundle). */
export function repositoryRoot(): string {
  return projectRoot();
}
