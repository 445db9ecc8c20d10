/**
 * The content reference (`docs/content.md`), generated from the content tree:
 * each template with its components and variables, and each PowerShell
 * component with its versions, downloads (and where each pinned digest comes
 * from), variables, what its sections run and what they change on the host —
 * the last read from the scripts' parse trees, not written by hand. The same
 * input gives the same bytes, so a test can tell a stale reference.
 */
import { type AnalyzedComponent, type AnalyzedContent, SECTION_NAMES, type SectionName } from "./analysis";
import { EFFECT_KINDS, type HostEffect, sectionEffects } from "./host-effects";
import { compareVersions } from "./versions";
import { type ComponentMetadata, type Template, restartsText } from "./schema";

// Markdown table cells: pipes escaped, line breaks flattened.
const cell = (s: string): string =>
  s
    .replace(/\|/g, "\\|")
    .replace(/\s*\n\s*/g, " ")
    .trim();
const code = (s: string): string => (s === "" ? "" : `\`${s.replace(/`/g, "'")}\``);
const hostPath = (p: string): string => `C:${p.replace(/\//g, "\\")}`;
const byName = <T extends { name: string; version: string }>(a: T, b: T): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : compareVersions(a.version, b.version);

function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  if (rows.length === 0) return [];
  return [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`),
    "",
  ];
}

function templateSection(t: Template, components: readonly AnalyzedComponent[]): string[] {
  const out = [`### ${t.name} ${t.version}`, "", t.description, ""];
  out.push(
    `Windows builds: ${t.os && t.os.length > 0 ? t.os.join(", ") : "none listed (chosen by name only)"}.${t.experimental ? " Experimental: used only when named, never picked by the host's build." : ""}`,
    "",
  );
  out.push(
    ...table(
      ["component", "version", "install priority", "uninstall priority"],
      t.packages.map((ref) => {
        const c = components.find((x) => x.key === ref);
        const [name, ...rest] = ref.split("_");
        return [
          `[${name ?? ref}](#${anchor(ref)})`,
          rest.join("_"),
          c ? String(c.metadata.install.priority) : "",
          c ? String(c.metadata.uninstall.priority) : "",
        ];
      }),
    ),
  );
  const prerequisites = t.packages.flatMap((ref) => {
    const c = components.find((x) => x.key === ref);
    return (c?.metadata.cluster_prerequisites ?? []).map((p) => `- ${c?.metadata.name ?? ref}: ${p}`);
  });
  if (prerequisites.length > 0) out.push("What the cluster must provide:", "", ...prerequisites, "");
  const variables = Object.entries(t.variables).sort(([a], [b]) => (a < b ? -1 : 1));
  if (variables.length > 0)
    out.push(
      "Variables the template sets:",
      "",
      ...table(
        ["variable", "value"],
        variables.map(([k, v]) => [code(k), code(v)]),
      ),
    );
  const needed = new Map<string, string[]>();
  for (const ref of t.packages) {
    const c = components.find((x) => x.key === ref);
    for (const [name, spec] of Object.entries(c?.metadata.variables ?? {})) {
      if (spec.required && spec.default === undefined && t.variables[name] === undefined)
        needed.set(name, [...(needed.get(name) ?? []), c?.metadata.name ?? ref]);
    }
  }
  if (needed.size > 0) {
    out.push("Variables the stack (agent config `variables`/`secrets`) must provide:", "");
    out.push(
      ...table(
        ["variable", "needed by"],
        [...needed.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [code(k), v.join(", ")]),
      ),
    );
  }
  return out;
}

const anchor = (key: string): string =>
  key
    .toLowerCase()
    .replace(/[^a-z0-9_ -]/g, "")
    .replace(/[ _]/g, "-");

function describeRun(component: AnalyzedComponent, section: SectionName): string {
  const run = component.sections[section];
  const scripts = run.scripts.map((s) => code(`C:\\${s.hostPath}`));
  const inline = run.commands
    .filter((c) => !c.facts.commands.some((x) => x.operator !== undefined))
    .map((c) =>
      code(
        c.text
          .split("\n")
          .filter((l) => !/^Import-Module\b/i.test(l.trim()))
          .join("; "),
      ),
    );
  const parts = [...scripts, ...inline];
  return parts.length > 0 ? parts.join(", ") : "nothing";
}

// A section that can end in `exit 3010` asks the agent for a restart when it does.
function asksForRestart(component: AnalyzedComponent, section: SectionName): boolean {
  const run = component.sections[section];
  return [...run.scripts.map((x) => x.facts), ...run.commands.map((x) => x.facts)].some((f) => f.exits.includes(3010));
}

function effectRows(effects: readonly HostEffect[]): string[][] {
  const seen = new Set<string>();
  const rows: string[][] = [];
  const sorted = [...effects].sort(
    (a, b) => EFFECT_KINDS.indexOf(a.kind) - EFFECT_KINDS.indexOf(b.kind) || (a.key ?? "").localeCompare(b.key ?? ""),
  );
  for (const e of sorted) {
    const name =
      e.key === undefined
        ? "(computed at run time)"
        : e.kind === "PATH entry" || e.kind === "file" || (e.kind === "Defender exclusion" && e.key.startsWith("/"))
          ? hostPath(e.key)
          : e.key;
    const id = `${e.kind}\0${name}\0${e.detail}`;
    if (seen.has(id)) continue;
    seen.add(id);
    rows.push([e.kind, code(name), e.detail]);
  }
  return rows;
}

/** What the component's metadata says its lifecycles disrupt (`disrupts`): the node is drained before them. */
function disruptionLine(m: ComponentMetadata): string {
  const parts = (["install", "upgrade", "uninstall"] as const).flatMap((l) => {
    const what = m.disrupts?.[l] ?? [];
    return what.length > 0 ? [`${l} ${restartsText(what)}`] : [];
  });
  return parts.length > 0
    ? `Disrupts the node's pods (the node is drained first): ${parts.join("; ")}.`
    : "Disrupts nothing for the node's pods (no drain), unless it asks for a restart.";
}

function componentSection(c: AnalyzedComponent): string[] {
  const m = c.metadata;
  const out = [`### ${m.name} ${m.version}`, "", `<a id="${anchor(c.key)}"></a>`, "", m.description, ""];
  out.push(
    `Shell: ${m.shell}; ${m.isolated ? "each command in a process of its own (isolated)" : "commands in the apply's PowerShell session"}; time limit ${m.timeout_seconds} s per command.`,
    "",
  );
  out.push(
    ...table(
      ["section", "priority", "runs", "reboot"],
      SECTION_NAMES.map((s) => [
        s === "pre_upgrade" ? `pre_upgrade (uninstall: ${m.pre_upgrade.uninstall ? "yes" : "no"})` : s,
        String(m[s].priority),
        describeRun(c, s),
        m[s].reboot ? "always" : asksForRestart(c, s) ? "when it exits 3010" : "no",
      ]),
    ),
  );
  out.push(disruptionLine(m), "");
  if (c.artifacts.length > 0) {
    out.push("Downloads (verified before use):", "");
    out.push(
      ...table(
        ["artifact", "version", "URL", "digest", "where the digest comes from"],
        c.artifacts.map((a) => [
          a.name,
          a.version,
          a.url,
          a.sha256
            ? `SHA-256 ${code(a.sha256)}`
            : a.sha512
              ? `SHA-512 ${code(a.sha512)}`
              : `SHA-256 from variable ${code(a.sha256Variable ?? "")}`,
          a.source,
        ]),
      ),
    );
  }
  const variables = Object.entries(m.variables).sort(([a], [b]) => (a < b ? -1 : 1));
  if (variables.length > 0) {
    out.push("Variables:", "");
    out.push(
      ...table(
        ["variable", "required", "secret", "default", "description"],
        variables.map(([k, v]) => [
          code(k),
          v.required ? "yes" : "no",
          v.secret ? "yes" : "no",
          v.default === undefined ? "" : code(v.default),
          v.description,
        ]),
      ),
    );
  }
  const creates = [...sectionEffects(c, "install"), ...sectionEffects(c, "post_upgrade")].filter(
    (e) => e.action === "create",
  );
  if (creates.length > 0)
    out.push(
      "What install (and post_upgrade) changes on the host:",
      "",
      ...table(["kind", "name or path", "detail"], effectRows(creates)),
    );
  const removes = sectionEffects(c, "uninstall").filter((e) => e.action === "remove");
  if (removes.length > 0)
    out.push("What uninstall takes back:", "", ...table(["kind", "name or path", "detail"], effectRows(removes)));
  if (m.files.length > 0)
    out.push(
      `Paths the component owns (the agent removes them with it): ${[...m.files]
        .sort()
        .map((f) => code(hostPath(f)))
        .join(", ")}.`,
      "",
    );
  return out;
}

/**
 * Renders the content reference for an analysed content tree: the Windows
 * (PowerShell) templates and components; templates made only of `sh`
 * components (the local fleet's sandbox) are left to docs/local-fleet.md.
 */
export function renderContentReference(content: AnalyzedContent): string {
  const keys = new Set(content.components.map((c) => c.key));
  const templates = content.templates.filter((t) => t.packages.every((p) => keys.has(p))).sort(byName);
  const components = [...content.components].sort((a, b) => byName(a.metadata, b.metadata));
  const out = [
    "# Content reference",
    "",
    "Generated by `winfleet content docs` from `content/`: templates, component metadata, each component's",
    "`artifacts.json`, and what the scripts' PowerShell parse trees show each section runs and changes.",
    "Do not edit by hand; `npm test` fails while this file differs from what the command generates.",
    "Paths are shown for a content root of `C:\\`. It covers the Windows (PowerShell) content; the local fleet's",
    "`sh` sandbox is described in [local-fleet.md](local-fleet.md). What each component's lifecycles disrupt for",
    "the node's pods (its metadata's `disrupts`) decides whether an apply drains the node first",
    "([upgrades.md](upgrades.md)).",
    "",
    "## Templates",
    "",
    ...table(
      ["template", "version", "Windows builds", "components"],
      templates.map((t) => [t.name, t.version, t.os?.join(", ") ?? "(by name only)", String(t.packages.length)]),
    ),
    ...templates.flatMap((t) => templateSection(t, components)),
    "## Where pinned versions and digests come from",
    "",
    ...table(
      ["component", "artifact", "version", "digest", "source"],
      components.flatMap((c) =>
        c.artifacts.map((a) => [
          `${c.metadata.name} ${c.metadata.version}`,
          a.name,
          a.version,
          a.sha256 ? "SHA-256 pinned" : a.sha512 ? "SHA-512 pinned" : `variable ${a.sha256Variable ?? ""}`,
          a.source,
        ]),
      ),
    ),
    "## Components",
    "",
    ...components.flatMap(componentSection),
  ];
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}
