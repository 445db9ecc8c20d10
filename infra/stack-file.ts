/**
 * Reading a stack file outside Pulumi (the local fleet, `winfleet render`):
 * `stacks/Pulumi.<stack>.yaml` is parsed and its `winfleet:fleet` value goes
 * through the same schema the program uses, so a stack means the same thing
 * wherever it is read. Secure values stay opaque.
 */
import { projectRoot, ValidationError } from "../agent/common";
import { readFile, readdir } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { type FleetConfig, parseFleetConfig } from "./config";

/** A stack file, read. */
export interface StackFile {
  readonly stack: string;
  readonly file: string;
  readonly fleet: FleetConfig;
  /** The `winfleet:fleet` value as written (what `pulumi config` holds). */
  readonly rawFleet: unknown;
  /** `winfleet:<key>` values other than `fleet`: secure ones as `{ secure }`, plain ones as written. */
  readonly secrets: Readonly<Record<string, unknown>>;
}

/** The default stacks directory: `stacks/` at the repository root. */
export const STACKS_DIR = join(projectRoot(), "stacks");

/** Reads a stack by name (`stacks/Pulumi.<name>.yaml`) or by path; errors name the file and the key path. */
export async function readStackFile(stack: string, options: { dir?: string } = {}): Promise<StackFile> {
  const byPath = stack.endsWith(".yaml") || stack.endsWith(".yml") || stack.includes("/");
  const file = byPath ? resolve(stack) : join(options.dir ?? STACKS_DIR, `Pulumi.${stack}.yaml`);
  const name = byPath
    ? basename(file)
        .replace(/^Pulumi\./, "")
        .replace(/\.ya?ml$/, "")
    : stack;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch {
    const dir = byPath ? dirname(file) : (options.dir ?? STACKS_DIR);
    const known = (await readdir(dir).catch(() => []))
      .map((f) => /^Pulumi\.(.+)\.ya?ml$/.exec(f)?.[1])
      .filter((s): s is string => s !== undefined);
    throw new ValidationError(file, [
      {
        path: "",
        message: `no such stack file${known.length > 0 ? `; stacks here: ${known.sort().join(", ")}` : ""}`,
        severity: "error",
      },
    ]);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ValidationError(file, [
      { path: "", message: `not valid YAML: ${(e as Error).message}`, severity: "error" },
    ]);
  }
  const config = (doc as { config?: Record<string, unknown> } | null)?.config;
  if (!config || typeof config !== "object")
    throw new ValidationError(file, [
      { path: "config", message: "missing: a stack file holds its values under config:", severity: "error" },
    ]);
  if (!("winfleet:fleet" in config))
    throw new ValidationError(file, [
      {
        path: "config.winfleet:fleet",
        message: "missing: the fleet's whole configuration lives under this key",
        severity: "error",
      },
    ]);
  let fleet: FleetConfig;
  try {
    fleet = parseFleetConfig(config["winfleet:fleet"]);
  } catch (e) {
    if (e instanceof ValidationError) throw new ValidationError(file, e.issues);
    throw e;
  }
  const secrets: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config))
    if (k.startsWith("winfleet:") && k !== "winfleet:fleet") secrets[k.slice("winfleet:".length)] = v;
  return { stack: name, file, fleet, rawFleet: config["winfleet:fleet"], secrets };
}

/** A path from a stack file, relative to the repository root as Pulumi's working directory is. */
export function stackPath(path: string, root = projectRoot()): string {
  return isAbsolute(path) ? path : join(root, path);
}
