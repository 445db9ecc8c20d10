/**
 * `diagnose`: runs every collector for the platform (each within its time
 * limit), masks every secret value the agent knows of in every byte gathered,
 * and packs the result with a manifest — each entry, its source and size, and
 * what could not be collected and why — into one tar.gz.
 */
import { createHash } from "node:crypto";
import { readFile, readdir } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { errorMessage, maskBuffer, REDACTED, type TarEntry, tarGz } from "../common";
import { stateDir } from "../lifecycle";
import { type AgentConfig, loadAgentConfig } from "../service";
import { AGENT_VERSION } from "../version";
import { agentCollectors } from "./agent-collectors";
import { brokerCollectors } from "./broker-collectors";
import {
  type Collected,
  type Collector,
  type DiagnoseContext,
  type ManifestEntry,
  type MissingEntry,
  runCollectors,
} from "./collector";
import { type CommandRunner, runCommand } from "./command";
import { posixCollectors } from "./posix-collectors";
import { windowsCollectors } from "./system-collectors.win32";

/** What to diagnose and how. */
export interface DiagnoseOptions {
  readonly root: string;
  readonly configFile?: string;
  readonly agentLog?: string;
  readonly brokerConfigFile?: string;
  readonly since: Date;
  readonly runDir: string;
  /** Each collector's time limit. */
  readonly timeoutMs: number;
  readonly platform?: NodeJS.Platform;
  readonly run?: CommandRunner;
  /** Replaces the platform's collectors (tests). */
  readonly collectors?: readonly Collector[];
  /** Added to the platform's collectors (tests inject a hung one). */
  readonly extraCollectors?: readonly Collector[];
}

/** The manifest at the archive's top (`manifest.json`). */
export interface Manifest {
  readonly format: 1;
  readonly createdAt: string;
  /** The node's name (the config's nodeName, else the host name). */
  readonly host: string;
  readonly platform: NodeJS.Platform;
  readonly agentVersion: string;
  readonly root: string;
  readonly since: string;
  readonly entries: readonly (ManifestEntry & { readonly sha256: string })[];
  readonly missing: readonly MissingEntry[];
  readonly collectors: Collected["runs"];
  /** How many distinct secret values were looked for (and replaced by [secret] wherever found, in any encoding). */
  readonly secretValuesMasked: number;
}

/** A finished diagnosis: masked entries and their manifest. */
export interface Diagnosis {
  readonly manifest: Manifest;
  readonly files: ReadonlyMap<string, Buffer>;
}

/** The collectors of `platform`. */
export function platformCollectors(platform: NodeJS.Platform): Collector[] {
  return [
    ...agentCollectors(),
    ...brokerCollectors,
    ...(platform === "win32" ? windowsCollectors() : posixCollectors()),
  ];
}

/**
 * Every secret value the host knows of: the config's secrets, config variables
 * a component (installed, per its recorded metadata) declares secret, the
 * defaults of such variables, and the environment's values under those names.
 * Each is masked however short ({@link maskSecrets}).
 */
async function knownSecrets(
  root: string,
  configFile: string | undefined,
  config: AgentConfig | undefined,
): Promise<string[]> {
  const out = new Set<string>();
  let secrets: Record<string, unknown> = config?.secrets ?? {};
  let variables: Record<string, unknown> = config?.variables ?? {};
  if (!config && configFile) {
    // An invalid config still has its secrets masked: read what it says as far as it can be read.
    const doc = await readFile(configFile, "utf8").then(
      (t) => parseYaml(t) as unknown,
      () => undefined,
    );
    const obj = (v: unknown): Record<string, unknown> =>
      v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
    secrets = obj(obj(doc).secrets);
    variables = obj(obj(doc).variables);
  }
  const secretNames = new Set(Object.keys(secrets));
  const components = join(stateDir(root), "components");
  for (const dir of await readdir(components).catch(() => [] as string[])) {
    try {
      const meta = JSON.parse(await readFile(join(components, dir, "metadata.json"), "utf8")) as {
        variables?: Record<string, { secret?: unknown; default?: unknown }>;
      };
      for (const [name, spec] of Object.entries(meta.variables ?? {})) {
        if (spec.secret !== true) continue;
        secretNames.add(name);
        if (typeof spec.default === "string") out.add(spec.default);
      }
    } catch {
      // a component whose metadata cannot be read declares nothing
    }
  }
  for (const name of secretNames) {
    for (const v of [secrets[name], variables[name], process.env[name]]) if (typeof v === "string") out.add(v);
  }
  for (const v of Object.values(secrets)) if (typeof v === "string") out.add(v);
  return [...out].filter((v) => v.length > 0).sort((a, b) => b.length - a.length);
}

/**
 * `data` with every secret replaced by [secret] — as it is, JSON-escaped, inside base64, hex or
 * URL-encoded text, in UTF-8 and UTF-16 (PowerShell's and the event log's) — and key material
 * (private keys, kubeconfig and bearer credentials) whether or not anyone named it.
 */
export function maskSecrets(data: Buffer, secrets: readonly string[]): Buffer {
  return maskBuffer(data, secrets, REDACTED);
}

/** Collects everything; never throws for a source that fails (that is recorded), only for a bad option. */
export async function diagnose(options: DiagnoseOptions): Promise<Diagnosis> {
  const platform = options.platform ?? process.platform;
  let config: AgentConfig | undefined;
  let configError: string | undefined;
  if (options.configFile) {
    try {
      config = await loadAgentConfig(options.configFile);
    } catch (e) {
      configError = errorMessage(e);
    }
  }
  const ctx: DiagnoseContext = {
    root: options.root,
    since: options.since,
    platform,
    configFile: options.configFile,
    config,
    configError,
    agentLog: options.agentLog,
    brokerConfigFile: options.brokerConfigFile,
    runDir: options.runDir,
    run: options.run ?? runCommand,
  };
  const collectors = [...(options.collectors ?? platformCollectors(platform)), ...(options.extraCollectors ?? [])];
  const collected = await runCollectors(collectors, ctx, { timeoutMs: options.timeoutMs });
  const secrets = await knownSecrets(options.root, options.configFile, config);
  const files = new Map<string, Buffer>();
  for (const path of [...collected.files.keys()].sort())
    files.set(path, maskSecrets(collected.files.get(path)?.data ?? Buffer.alloc(0), secrets));
  const manifest: Manifest = {
    format: 1,
    createdAt: new Date().toISOString(),
    host: config?.nodeName ?? hostname(),
    platform,
    agentVersion: AGENT_VERSION,
    root: options.root,
    since: options.since.toISOString(),
    entries: [...files].map(([path, data]) => {
      const c = collected.files.get(path);
      return {
        path,
        collector: c?.collector ?? "",
        source: c?.source ?? "",
        size: data.length,
        sha256: createHash("sha256").update(data).digest("hex"),
      };
    }),
    missing: collected.missing.map((m) => ({ ...m, reason: maskSecrets(Buffer.from(m.reason), secrets).toString() })),
    collectors: [...collected.runs].sort((a, b) => a.collector.localeCompare(b.collector)),
    secretValuesMasked: secrets.length,
  };
  return { manifest, files };
}

/** The archive: `manifest.json`, then every entry by path. */
export function archiveOf(d: Diagnosis): Buffer {
  const mtime = Math.trunc(Date.parse(d.manifest.createdAt) / 1000);
  const entries: TarEntry[] = [
    { path: "manifest.json", data: Buffer.from(`${JSON.stringify(d.manifest, null, 2)}\n`), mtime, mode: 0o600 },
  ];
  for (const [path, data] of d.files) entries.push({ path, data, mtime, mode: 0o600 });
  return tarGz(entries);
}
