/**
 * An esbuild plugin that loads Node's heavier built-in modules when a bundle
 * first uses them rather than when it starts. esbuild hoists every ES module's
 * imports to the top of a bundle, so `winfleet-agent --version` would load
 * `crypto`, `net` and `child_process` (with the streams and `dgram` they pull
 * in) only because some command imports them: 11 ms of an 84 ms `node -e 0`
 * on this machine, measured by requiring them.
 *
 * Each such import resolves to a small CommonJS module of getters, one per
 * export the built-in has at build time, that requires the real module on the
 * first read. esbuild's interop copies those as getters too, so nothing is read
 * before a command touches it; a module read at a bundle's top level (a class
 * extending `net.Socket`) loads then, as before.
 */
import { createRequire } from "node:module";
import type { Plugin } from "esbuild";

/** The built-ins loaded on first use: each costs a start measurable time and none is needed to parse a command line. */
export const LAZY_BUILTINS = [
  "child_process",
  "crypto",
  "dgram",
  "dns",
  "http",
  "http2",
  "https",
  "net",
  "tls",
  "zlib",
] as const;

const NAMESPACE = "lazy-builtin";

/** The CommonJS text standing in for the built-in `name`, given its export names. */
export function lazyModuleSource(name: string, keys: readonly string[]): string {
  const props = keys.map((k) => `  ${JSON.stringify(k)}: d(${JSON.stringify(k)}),`).join("\n");
  return [
    '"use strict";',
    "let m;",
    `const load = () => (m ??= require(${JSON.stringify(`node:${name}`)}));`,
    "const d = (k) => ({ enumerable: true, get: () => load()[k], set: (v) => { load()[k] = v; } });",
    `Object.defineProperties(exports, {\n${props}\n});`,
    "",
  ].join("\n");
}

/** The plugin; `lazy` overrides which built-ins it defers. */
export function lazyBuiltins(lazy: readonly string[] = LAZY_BUILTINS): Plugin {
  const filter = new RegExp(`^(node:)?(${lazy.join("|")})$`);
  const real = createRequire(__filename);
  return {
    name: "lazy-builtins",
    setup(b) {
      // The stand-in's own require of the built-in is left to Node (external), never resolved again here.
      b.onResolve({ filter }, (args) =>
        args.namespace === NAMESPACE
          ? { path: args.path, external: true }
          : { path: args.path.replace(/^node:/, ""), namespace: NAMESPACE },
      );
      b.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => ({
        contents: lazyModuleSource(args.path, Object.keys(real(`node:${args.path}`) as object)),
        loader: "js",
      }));
    },
  };
}
