/**
 * The components recorded on the host: each version's metadata and Ignition
 * file, kept under `<root>/.winfleet/components/<name>_<version>/` from the
 * moment a run plans to lay it down. Uninstalling or upgrading away from a
 * version reads this record, never the content, which may no longer carry it.
 */
import { join } from "node:path";
import {
  canonicalJson,
  type ConfinedDir,
  AgentError,
  AgentErrorCode,
  errorMessage,
  readdirIn,
  readFileIn,
  removeIn,
  writeFileIn,
} from "../common";
import { type CatalogComponent, configPaths, parseMetadata } from "../content";
import { type IgnitionConfig, parseIgnition } from "../ignition";
import { type Journal, stateOf } from "./journal";
import type { InstalledComponent } from "./model";

/** A recorded component version. */
export interface Recorded {
  readonly name: string;
  readonly version: string;
  readonly metadata: InstalledComponent["metadata"];
  readonly config: IgnitionConfig;
  readonly paths: readonly string[];
}

function components(root: string): ConfinedDir {
  return stateOf(root).sub("components");
}

function dir(root: string, name: string, version: string): ConfinedDir {
  return components(root).sub(`${name}_${version}`);
}

/** Records a component version (idempotent). */
export async function record(root: string, c: CatalogComponent): Promise<void> {
  const d = dir(root, c.metadata.name, c.metadata.version);
  await writeFileIn(d, "component.ign", c.ignition, { mode: 0o600 });
  await writeFileIn(d, "metadata.json", `${canonicalJson(c.metadata)}\n`, { mode: 0o600 });
}

/** Reads a recorded version; its absence means the state directory was damaged. */
export async function recorded(root: string, name: string, version: string): Promise<Recorded> {
  const d = dir(root, name, version);
  let ignition: string;
  let metadataText: string;
  try {
    const [ign, meta] = await Promise.all([readFileIn(d, "component.ign"), readFileIn(d, "metadata.json")]);
    if (ign === undefined || meta === undefined)
      throw new Error(`${ign === undefined ? "component.ign" : "metadata.json"} is not there`);
    [ignition, metadataText] = [ign.toString("utf8"), meta.toString("utf8")];
  } catch (e) {
    if (e instanceof AgentError) throw e;
    throw new AgentError(
      AgentErrorCode.NotFound,
      `the record of ${name} ${version} is missing from ${d.path} (${errorMessage(e)}); the agent cannot uninstall or upgrade it without its metadata`,
    );
  }
  const { config } = parseIgnition(ignition, { subject: join(d.path, "component.ign") });
  const metadata = parseMetadata(metadataText, join(d.path, "metadata.json")).value;
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
  // Through the state directory's walk: a link planted as `components` (or as an entry) is refused
  // or removed itself, never followed into a directory whose entries would all go.
  const base = components(root);
  await Promise.resolve();
  for (const entry of readdirIn(base)) if (!keep.has(entry)) removeIn(base, entry);
}
