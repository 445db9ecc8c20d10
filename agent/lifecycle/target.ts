/**
 * Choosing what to converge to: a template from a catalog (by name and
 * version, the newest version by default, or by the host's Windows build when
 * no name is given) and the components it names, each checked to exist.
 */
import { release } from "node:os";
import { AgentError, AgentErrorCode } from "../common";
import { type Catalog, compareVersions, type Template, splitPackageRef } from "../content";
import type { DesiredComponent } from "./model";

export { compareVersions };

/** What to converge to. */
export interface Target {
  readonly template: Template;
  readonly components: readonly DesiredComponent[];
}

/** The host's Windows build number (20348 on Server 2022), or undefined off Windows. */
export function windowsBuild(
  platform: NodeJS.Platform = process.platform,
  osRelease: string = release(),
): number | undefined {
  if (platform !== "win32") return undefined;
  const build = Number(osRelease.split(".")[2]);
  return Number.isInteger(build) ? build : undefined;
}

/**
 * Picks the template: by name (and version, default the newest), else the newest non-experimental one whose `os` lists
 * `build`.
 */
export function pickTemplate(catalog: Catalog, want: { name?: string; version?: string; build?: number }): Template {
  const byVersion = (a: Template, b: Template): number => compareVersions(b.version, a.version);
  if (want.name !== undefined) {
    const named = catalog.templates.filter((t) => t.name === want.name).sort(byVersion);
    if (named.length === 0) {
      const names = [...new Set(catalog.templates.map((t) => t.name))].sort();
      throw new AgentError(
        AgentErrorCode.NotFound,
        `no template named "${want.name}" in ${catalog.dir}; available: ${names.join(", ") || "none"}`,
      );
    }
    const chosen = want.version === undefined ? named[0] : named.find((t) => t.version === want.version);
    if (!chosen)
      throw new AgentError(
        AgentErrorCode.NotFound,
        `template ${want.name} has no version ${want.version} in ${catalog.dir}; available: ${named.map((t) => t.version).join(", ")}`,
      );
    // A template's os list is a promise about the host; a pool naming win2019 for a 2022 host is a mistake to stop at,
    // not to apply.
    if (want.build !== undefined && chosen.os !== undefined && !chosen.os.includes(want.build)) {
      throw new AgentError(
        AgentErrorCode.InvalidInput,
        `template ${chosen.name} ${chosen.version} is for Windows builds ${chosen.os.join(", ")}, and this host is build ${want.build}`,
      );
    }
    return chosen;
  }
  if (want.build === undefined) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      "no template named, and this host has no Windows build number to pick one by: name one with --template (or `template` in the agent config)",
    );
  }
  const listing = catalog.templates.filter((t) => t.os?.includes(want.build as number));
  const fits = listing.filter((t) => !t.experimental).sort(byVersion);
  if (fits.length === 0 && listing.length > 0) {
    const experimental = listing.map((t) => `${t.name} ${t.version}`).join(", ");
    throw new AgentError(
      AgentErrorCode.NotFound,
      `only experimental templates list Windows build ${want.build} (${experimental}): name one with --template (or \`template\` in the agent config) to use it`,
    );
  }
  if (fits.length === 0) {
    const covered = catalog.templates
      .map((t) => `${t.name} ${t.version}: ${t.os?.join(", ") ?? "no os list"}`)
      .join("; ");
    throw new AgentError(
      AgentErrorCode.NotFound,
      `no template lists Windows build ${want.build} in its os; the templates cover: ${covered || "(no templates)"}`,
    );
  }
  const names = [...new Set(fits.map((t) => t.name))].sort();
  if (names.length > 1) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `several templates fit Windows build ${want.build} (${names.join(", ")}): name one with --template (or \`template\` in the agent config)`,
    );
  }
  return fits[0] as Template;
}

/** The template's components from the catalog; every one must exist. */
export function resolveTarget(catalog: Catalog, template: Template): Target {
  const missing: string[] = [];
  const components: DesiredComponent[] = [];
  for (const ref of template.packages) {
    const c = catalog.components.get(ref);
    if (!c) {
      const { name } = splitPackageRef(ref);
      const versions = [...catalog.components.values()]
        .filter((x) => x.metadata.name === name)
        .map((x) => x.metadata.version);
      missing.push(`${ref}${versions.length > 0 ? ` (available: ${versions.join(", ")})` : ""}`);
      continue;
    }
    components.push({ name: c.metadata.name, version: c.metadata.version, metadata: c.metadata, paths: c.paths });
  }
  if (missing.length > 0)
    throw new AgentError(
      AgentErrorCode.NotFound,
      `template ${template.name} ${template.version} names components that are not in ${catalog.dir}: ${missing.join(", ")}`,
    );
  return { template, components };
}
