/**
 * Command modules loaded only when needed. Each module is listed with the
 * top-level command names it registers; a command line that names one of them
 * loads just the modules registering it, so `winfleet-agent broker` never loads
 * the lifecycle engine and `--version` loads nothing. Help, an unknown command
 * or anything unusual loads every module, which is always correct, only slower.
 * `lazy-commands.test.ts` checks each module registers exactly the names listed.
 */
import type { Command } from "commander";

/** A module of commands: the top-level names it registers, and how to load its registration. */
export interface LazyModule {
  readonly names: readonly string[];
  readonly load: () => (program: Command) => void;
}

/** The command-line words that need no command registered: commander answers them itself. */
const VERSION_FLAGS = new Set(["-V", "--version"]);

/** The modules `argv` (process.argv) needs, in their order. */
export function modulesFor<T extends { readonly names: readonly string[] }>(
  modules: readonly T[],
  argv: readonly string[],
): readonly T[] {
  const words = argv.slice(2);
  if (words.length > 0 && words.every((w) => VERSION_FLAGS.has(w))) return [];
  const first = words[0];
  const wanted = first === undefined ? [] : modules.filter((m) => m.names.includes(first));
  return wanted.length > 0 ? wanted : modules;
}

/** Registers the modules `argv` needs; `load` runs only for those. */
export function registerLazily(program: Command, modules: readonly LazyModule[], argv: readonly string[]): void {
  for (const m of modulesFor(modules, argv)) m.load()(program);
}
