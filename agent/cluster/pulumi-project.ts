/**
 * The Pulumi program run by the real engines set-up built, on a copy of the project: the CLI
 * and language host first on PATH, a PULUMI_HOME holding the plugins set-up built, a local file
 * backend, passphrase secrets, no update checks and no plugin downloads. A copy, because a stack
 * made for one run (a throwaway cluster's) must not write its settings into the checkout's
 * stacks/.
 */
import { cpSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, delimiter, dirname, join } from "node:path";
import { projectRoot } from "../common";
import type { Engine } from "./engines";

/** The project's files a Pulumi run needs, copied; node_modules is linked, not copied. */
const PROJECT_ENTRIES = [
  "Pulumi.yaml",
  "package.json",
  "tsconfig.json",
  "agent",
  "components",
  "infra",
  "content",
  "policy",
];

/** A project copy and the environment the engine runs it in. */
export interface PulumiProject {
  /** The copy (Pulumi's working directory). */
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  /** Writes `stacks/Pulumi.<stack>.yaml` in the copy. */
  writeStack(stack: string, yaml: string): void;
  /** Removes the copy, the Pulumi home and the backend. */
  dispose(): void;
}

/**
 * Copies the project into `base` (which must not exist or be empty) and prepares the engine's
 * environment beside it: `base/project`, `base/pulumi-home`, `base/backend`.
 */
export function pulumiProject(
  engines: Readonly<Record<string, Engine>>,
  base: string,
  extraEnv: NodeJS.ProcessEnv = {},
): PulumiProject {
  const pulumiEngine = engines.pulumi;
  if (!pulumiEngine) throw new Error("pulumiProject needs the pulumi engine");
  const root = projectRoot();
  const dir = join(base, "project");
  mkdirSync(join(dir, "stacks"), { recursive: true });
  for (const entry of PROJECT_ENTRIES)
    cpSync(join(root, entry), join(dir, entry), {
      recursive: true,
      filter: (src) => !src.includes(`${root}/.winfleet`),
    });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  const home = join(base, "pulumi-home");
  mkdirSync(join(home, "plugins"), { recursive: true });
  // The engine lists plugin directories by type, so each is a real directory; the binaries in it are links.
  for (const e of Object.values(engines)) {
    if (!e.plugin) continue;
    const pluginDir = join(home, "plugins", basename(e.plugin));
    mkdirSync(pluginDir);
    for (const f of readdirSync(e.plugin)) symlinkSync(join(e.plugin, f), join(pluginDir, f));
  }
  const backend = join(base, "backend");
  mkdirSync(backend);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(pulumiEngine.binaries.pulumi ?? "")}${delimiter}${process.env.PATH ?? ""}`,
    PULUMI_HOME: home,
    PULUMI_BACKEND_URL: `file://${backend}`,
    // The backend and its secrets live and die with the throwaway cluster they describe.
    PULUMI_CONFIG_PASSPHRASE: "winfleet-local",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
    NODE_OPTIONS: "",
    ...extraEnv,
  };
  return {
    dir,
    env,
    writeStack: (stack, yaml) => writeFileSync(join(dir, "stacks", `Pulumi.${stack}.yaml`), yaml),
    dispose: () => rmSync(base, { recursive: true, force: true }),
  };
}
