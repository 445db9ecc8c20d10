/**
 * The components recorded on the host: each version's metadata and Ignition
 * file, kept under `<root>/.winfleet/components/<name>_<version>/` from the
 * moment a run plans to lay it down. Uninstalling or upgrading away from a
 * version reads this record, never the content, which may no longer carry it.
 */
import { readFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic, canonicalJson, AgentError, AgentErrorCode } from "../common";
import { type CatalogComponent, configPaths, parseMetadata } from "../content";
import { type IgnitionConfig, parseIgnition } from "../ignition";
import { type Journal, stateDir } from "./journal";
import type { InstalledComponent } from "./model";

/** A recorded component version. */
export interface Recorded {
  readonly name: string;
  readonly version: string;
  readonly metadata: InstalledComponent["metadata"];
  readonly config: IgnitionConfig;
  readonly paths: readonly string[];
}

function dir(root: string, name: string, version: string): string {
  return join(stateDir(root), "components", `${name}_${version}`);
}

/** Records a component version (idempotent). */
export async function record(root: string, c: CatalogComponent): Promise<void> {
  const d = dir(root, c.metadata.name, c.metadata.version);
  await writeFileAtomic(join(d, "component.ign"), c.ignition, { mode: 0o600, makeParents: true });
  await writeFileAtomic(join(d, "metadata.json"), `${canonicalJson(c.metadata)}\n`, { mode: 0o600 });
}

/** Reads a recorded version; its absence means the state directory was damaged. */
export async function recorded(root: string, name: string, version: string): Promise<Recorded> {
  const d = dir(root, name, version);
  let ignition: string;
  let metadataText: string;
  try {
    [ignition, metadataText] = await Promise.all([
      readFile(join(d, "component.ign"), "utf8"),
      readFile(join(d, "metadata.json"), "utf8"),
    ]);
  } catch (e) {
    throw new AgentError(
      AgentErrorCode.NotFound,
      `the record of ${name} ${version} is missing from ${d} (${(e as Error).message}); the agent cannot uninstall or upgrade it without its metadata`,
    );
  }
  const { config } = parseIgnition(ignition, { subject: join(d, "component.ign") });
  const metadata = parseMetadata(metadataText, join(d, "metadata.json")).value;
  return { name, version, metadata, config, paths: configPaths(config) };
}

/** The installed components as the planner sees them: the journal's list with each version's recorded metadata. */
export async function installedComponents(root: string, journal: Journal): Promise<InstalledComponent[]> {
  return Promise.all(
    journal.installed.map(async (i) => {
      const r = await recorded(root, i.name, i.version);
      return {
        name: i.name,
        version: i.version,
        metadata: r.metadata,
        paths: r.paths,
        ...(i.pending ? { pending: i.pending } : {}),
      };
    }),
  );
}

/** Removes records no installed component and no step of the run still needs. */
export async function pruneRecords(root: string, journal: Journal): Promise<void> {
  const keep = new Set(journal.installed.map((i) => `${i.name}_${i.version}`));
  for (const s of journal.run?.steps ?? []) keep.add(`${s.component}_${s.version}`);
  const base = join(stateDir(root), "components");
  for (const entry of await readdir(base).catch(() => [])) {
    if (!keep.has(entry)) await rm(join(base, entry), { recursive: true, force: true });
  }
}
