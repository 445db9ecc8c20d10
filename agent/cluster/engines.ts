/**
 * Where the real engines are: the Pulumi CLI, its Node.js language host and resource plugins,
 * kube-apiserver, kube-controller-manager and etcd, built by `npm run setup`
 * (`scripts/engines/build.mjs`) at the versions `scripts/engines/engines.json` pins and cached
 * outside the checkout. This module only reads what set-up recorded; it builds nothing.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { projectRoot } from "../common";

const manifestSchema = z.object({
  engines: z.array(
    z.object({
      name: z.string(),
      version: z.string(),
      binaries: z.array(z.string()),
      plugin: z.object({ kind: z.string(), name: z.string() }).optional(),
    }),
  ),
});

const indexSchema = z.object({
  engines: z.record(
    z.string(),
    z.object({
      version: z.string(),
      dir: z.string(),
      binaries: z.record(z.string(), z.string()),
      plugin: z.string().optional(),
    }),
  ),
});

/** One built engine: its pinned version and where each of its binaries is. */
export interface Engine {
  readonly name: string;
  readonly version: string;
  readonly binaries: Readonly<Record<string, string>>;
  /** For a resource plugin, the directory the Pulumi engine finds it in. */
  readonly plugin?: string;
}

/** The engines' cache directory: `$WINFLEET_CACHE/engines`, by default `~/.cache/winfleet/engines`. */
export function enginesCache(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.WINFLEET_CACHE || join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "winfleet"), "engines");
}

/** Raised when an engine is missing or was built at another version than the checkout pins. */
export class EngineMissingError extends Error {
  override readonly name = "EngineMissingError";
}

/**
 * The engines set-up built, each checked against the version this checkout pins.
 * @throws EngineMissingError naming the engine and `npm run setup` when one is absent or stale.
 */
export function findEngines(
  names: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  root = projectRoot(),
): Record<string, Engine> {
  const manifest = manifestSchema.parse(
    JSON.parse(readFileSync(join(root, "scripts", "engines", "engines.json"), "utf8")),
  );
  const indexPath = join(enginesCache(env), "index.json");
  const index = existsSync(indexPath)
    ? indexSchema.parse(JSON.parse(readFileSync(indexPath, "utf8")))
    : { engines: {} };
  const out: Record<string, Engine> = {};
  for (const name of names) {
    const pinned = manifest.engines.find((e) => e.name === name);
    if (!pinned) throw new EngineMissingError(`no engine named ${name} in scripts/engines/engines.json`);
    const built = index.engines[name];
    if (!built)
      throw new EngineMissingError(
        `${name} ${pinned.version} has not been built: run npm run setup (it builds the engines with Go)`,
      );
    if (built.version !== pinned.version) {
      throw new EngineMissingError(
        `${name} was built at ${built.version} but this checkout pins ${pinned.version}: run npm run setup`,
      );
    }
    for (const b of pinned.binaries) {
      const path = built.binaries[b];
      if (!path || !existsSync(path))
        throw new EngineMissingError(`${name} ${pinned.version}: ${b} is missing from ${built.dir}: run npm run setup`);
    }
    out[name] = {
      name,
      version: built.version,
      binaries: built.binaries,
      ...(built.plugin ? { plugin: built.plugin } : {}),
    };
  }
  return out;
}
