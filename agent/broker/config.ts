/**
 * The broker's config file, in wins's keys (YAML or JSON). Both eras of the
 * whitelist key are read — `white_list` (wins ≥ 0.1.2) and `whiteList` (≤ 0.1.1,
 * what the upgrader chart writes) — with camelCase or snake_case nested keys,
 * matched case-insensitively as Go's decoder did. Unlike wins, an empty process
 * whitelist denies everything unless `allowAll: true`.
 */
import { readFile } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ValidationError, zodIssues } from "../common";
import { allowEntryProblem } from "./environment";

/** Default names, as wins: pipes on Windows; on Linux a name becomes a socket in the run directory. */
export const DEFAULT_LISTEN = "rancher_wins";
export const DEFAULT_PROXY = "rancher_wins_proxy";

/** An environment allow-list entry: a name or a `PREFIX*`, never one that covers a loader or interpreter variable. */
const envEntry = z
  .string()
  .trim()
  .superRefine((entry, ctx) => {
    const problem = allowEntryProblem(entry);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });

const brokerSchema = z.strictObject({
  debug: z.boolean().default(false),
  listen: z.string().trim().min(1, "must not be blank").default(DEFAULT_LISTEN),
  proxy: z.string().trim().min(1, "must not be blank").default(DEFAULT_PROXY),
  whiteList: z
    .strictObject({
      processPaths: z.array(z.string().trim().min(1, "must not be blank")).default([]),
      proxyPorts: z.array(z.number().int().min(1).max(65_535)).default([]),
      allowAll: z.boolean().default(false),
      /**
       * winfleet: the variables a client may set with `prc run --envs` (names or
       * `PREFIX*`); empty means the built-in list (proxy variables and the content
       * SAS token). Loader and interpreter variables can never be allowed.
       */
      // Absent rather than defaulted, so a config without them reads as it did before they existed.
      envs: z.array(envEntry).optional(),
      /** winfleet: more variables one binary's clients may set, by its path (as in processPaths). */
      processEnvs: z.record(z.string(), z.array(envEntry)).optional(),
    })
    .default({ processPaths: [], proxyPorts: [], allowAll: false }),
  /** winfleet: where the broker keeps its process records (for stale-process cleanup). */
  stateDir: z.string().optional(),
});

/** The parsed broker config. */
export type BrokerConfig = z.infer<typeof brokerSchema>;

// Keys as Go's case-insensitive json matching would see them, then our canonical names.
const TOP_KEYS: Record<string, string> = {
  debug: "debug",
  listen: "listen",
  proxy: "proxy",
  white_list: "whiteList",
  whitelist: "whiteList",
  statedir: "stateDir",
  state_dir: "stateDir",
  allowall: "allowAll",
  allow_all: "allowAll",
};
const LIST_KEYS: Record<string, string> = {
  processpaths: "processPaths",
  process_paths: "processPaths",
  proxyports: "proxyPorts",
  proxy_ports: "proxyPorts",
  allowall: "allowAll",
  allow_all: "allowAll",
  envs: "envs",
  processenvs: "processEnvs",
  process_envs: "processEnvs",
};
// Sections wins reads that the broker does not implement; accepted and ignored so existing files load.
const IGNORED = new Set(["upgrade", "systemagent", "agentstricttlsmode", "csi-proxy", "tls-config"]);

function canonical(
  raw: Record<string, unknown>,
  keys: Record<string, string>,
  ignored: Set<string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    const lower = k.toLowerCase();
    if (ignored.has(lower)) continue;
    out[keys[lower] ?? k] = v;
  }
  return out;
}

/** Parses config text (YAML, which includes JSON); `subject` names it in errors. */
export function parseBrokerConfig(text: string, subject = "broker config"): BrokerConfig {
  let doc: unknown;
  try {
    doc = text.trim() === "" ? {} : parseYaml(text);
  } catch (e) {
    throw new ValidationError(subject, [
      { path: "", message: `not valid YAML or JSON: ${(e as Error).message}`, severity: "error" },
    ]);
  }
  if (doc === null || doc === undefined) doc = {};
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new ValidationError(subject, [
      { path: "", message: "must be a mapping of wins config keys", severity: "error" },
    ]);
  }
  const top = canonical(doc as Record<string, unknown>, TOP_KEYS, IGNORED);
  // allowAll may sit at the top level or inside the whitelist section.
  const list =
    top.whiteList !== null && typeof top.whiteList === "object" && !Array.isArray(top.whiteList)
      ? canonical(top.whiteList as Record<string, unknown>, LIST_KEYS, new Set())
      : top.whiteList;
  if (top.allowAll !== undefined) {
    top.whiteList = { ...(typeof list === "object" && list !== null ? list : {}), allowAll: top.allowAll };
    delete top.allowAll;
  } else if (list !== undefined) {
    top.whiteList = list;
  }
  const parsed = brokerSchema.safeParse(top);
  if (!parsed.success) throw new ValidationError(subject, zodIssues(parsed.error));
  return parsed.data;
}

/** Reads and parses the config file; a missing file is an error (unlike wins, which silently used defaults). */
export async function loadBrokerConfig(file: string): Promise<BrokerConfig> {
  return parseBrokerConfig(await readFile(file, "utf8"), file);
}

/**
 * The address a configured name listens on: a named pipe on Windows, and on
 * Linux either the absolute socket path given or `<runDir>/<name>.sock`.
 */
export function endpointPath(name: string, platform: NodeJS.Platform, runDir: string): string {
  if (platform === "win32") return name.startsWith("\\\\.\\pipe\\") ? name : `\\\\.\\pipe\\${name}`;
  return isAbsolute(name) ? name : `${runDir}/${name}.sock`;
}
