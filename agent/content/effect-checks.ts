/**
 * The checks about what content does with values and to the host:
 *
 * - `secrets`: a variable a component declares secret flows (through
 *   assignments, followed per function scope) only into Set-WinfleetSecretFile
 *   for a file the component owns (its metadata `files`), through pure
 *   transformations (ConvertTo-Json, ConvertTo-WinfleetKubeconfig) on the way;
 *   never into output, a log, a throw, a command line or any other file;
 * - `uninstall`: every service, firewall rule, startup task, PATH entry and
 *   Defender exclusion that install or post_upgrade creates is removed by the
 *   component's uninstall, by the same name or path;
 * - `variables`: every variable a section reads is declared in the metadata
 *   (winfleet-common functions' reads and artifacts' digest variables
 *   included), and every declared one is read.
 */
import { type AnalyzedComponent, type CommonModule, helperReads, unitsOfComponent } from "./analysis";
import { type EffectKind, argumentFor, evaluatePath, sectionEffects } from "./host-effects";
import type { ScriptFacts } from "./powershell-facts";
import type { Finding } from "./findings";

const at = (where: string, line: number): string =>
  /\.(ps1|psm1)$/i.test(where) ? `${where}:${line}` : `${where} line ${line}`;

// Commands that only reshape a value: a secret passing through one is still
// only as exposed as wherever the result goes.
const PURE = new Set([
  "convertto-json",
  "convertto-winfleetkubeconfig",
  "where-object",
  "foreach-object",
  "select-object",
  "sort-object",
  "get-winfleetvariable",
  "assert-winfleetvariable",
]);
// Commands whose result says nothing about the secret they were given.
const OPAQUE_RESULT = new Set(["set-winfleetsecretfile", "test-path"]);
const SECRET_SINK = "set-winfleetsecretfile";

// Secret-carrying parameters of winfleet-common's own functions, checked like content.
const COMMON_SECRET_PARAMETERS: Readonly<Record<string, readonly string[]>> = {
  "set-winfleetsecretfile": ["content"],
  "convertto-winfleetkubeconfig": ["token"],
};

function scopeKey(fn: string | undefined, variable: string): string {
  return `${(fn ?? "").toLowerCase()}::${variable}`;
}

/** Variables holding a secret, per function scope (script-level ones are seen inside functions too). */
function taintedVariables(facts: ScriptFacts, sources: ReadonlySet<string>, seeded: ReadonlySet<string>): Set<string> {
  const tainted = new Set(seeded);
  const reads = (fn: string | undefined, variables: readonly string[]): boolean =>
    variables.some((v) => sources.has(v) || tainted.has(scopeKey(fn, v)) || tainted.has(scopeKey(undefined, v)));
  let changed = true;
  while (changed) {
    changed = false;
    for (const a of facts.assignments) {
      const key = scopeKey(a.inFunction, a.variable);
      if (tainted.has(key) || a.commands.some((c) => OPAQUE_RESULT.has(c.toLowerCase()))) continue;
      const helperRead =
        a.commands.some((c) => /^(get|assert)-winfleetvariable$/i.test(c)) &&
        a.strings.some((s) => sources.has(`env:${s.toLowerCase()}`));
      if (helperRead || reads(a.inFunction, a.variables)) {
        tainted.add(key);
        changed = true;
      }
    }
  }
  return tainted;
}

function ownedBy(component: AnalyzedComponent, path: string): boolean {
  const p = path.toLowerCase();
  return component.metadata.files.some((f) => {
    const owned = f.replace(/\\/g, "/").toLowerCase();
    return p === owned || p.startsWith(`${owned.replace(/\/$/, "")}/`);
  });
}

function secretFindingsIn(
  component: AnalyzedComponent,
  where: string,
  facts: ScriptFacts,
  sources: ReadonlySet<string>,
  seeded: ReadonlySet<string>,
  label: string,
): Finding[] {
  const tainted = taintedVariables(facts, sources, seeded);
  const secretIn = (fn: string | undefined, variables: readonly string[]): string | undefined =>
    variables.find((v) => sources.has(v) || tainted.has(scopeKey(fn, v)) || tainted.has(scopeKey(undefined, v)));
  const out: Finding[] = [];
  for (const c of facts.commands) {
    const carrying = c.args.map((a) => secretIn(c.inFunction, a.variables)).find((v) => v !== undefined);
    if (carrying === undefined) continue;
    const name = c.name.toLowerCase();
    if (name === SECRET_SINK) {
      const pathArg = argumentFor(c, "path");
      const path = pathArg ? evaluatePath(facts, pathArg) : undefined;
      if (path === undefined)
        out.push({
          check: "secrets",
          where: at(where, c.line),
          message: `writes ${label} (via $${carrying}) to a path that cannot be resolved, so it cannot be shown to be the intended file`,
        });
      else if (!component.metadata.files.length || !ownedBy(component, path))
        out.push({
          check: "secrets",
          where: at(where, c.line),
          message: `writes ${label} to ${path}, which is not a file the component owns (its metadata files)`,
        });
      continue;
    }
    if (PURE.has(name)) {
      if (c.use === "statement")
        out.push({
          check: "secrets",
          where: at(where, c.line),
          message: `${c.name} of ${label} (via $${carrying}) is written to the output`,
        });
      continue;
    }
    out.push({
      check: "secrets",
      where: at(where, c.line),
      message: `passes ${label} (via $${carrying}) to ${c.name}, which may print, log, store or expose it on a command line`,
    });
  }
  for (const e of facts.emissions) {
    const carrying = secretIn(e.inFunction, e.variables);
    if (carrying === undefined) continue;
    // The one place a secret may be written: the secret-file helper's own write.
    if (
      e.kind === "method" &&
      e.inFunction?.toLowerCase() === SECRET_SINK &&
      /^\[System\.IO\.File\]::WriteAllText\(/i.test(e.text.trim())
    )
      continue;
    const verb =
      e.kind === "throw"
        ? "throws"
        : e.kind === "method"
          ? `passes to ${e.text.trim().split("(")[0] ?? "a method"}`
          : "writes to the output";
    out.push({ check: "secrets", where: at(where, e.line), message: `${verb} ${label} (via $${carrying})` });
  }
  return out;
}

/** The `secrets` check for one component. */
export function secretFindings(component: AnalyzedComponent): Finding[] {
  const out: Finding[] = [];
  const secrets = Object.entries(component.metadata.variables)
    .filter(([, v]) => v.secret)
    .map(([k]) => k);
  if (secrets.length > 0) {
    const sources = new Set(secrets.map((s) => `env:${s.toLowerCase()}`));
    for (const { where, facts } of unitsOfComponent(component))
      out.push(...secretFindingsIn(component, where, facts, sources, new Set(), `the secret ${secrets.join("/")}`));
  }
  for (const s of component.scripts) {
    const seeded = new Set<string>();
    for (const f of s.facts.functions)
      for (const p of COMMON_SECRET_PARAMETERS[f.name.toLowerCase()] ?? [])
        if (f.parameters.includes(p)) seeded.add(scopeKey(f.name, p));
    if (seeded.size === 0) continue;
    // Inside the helpers, the secret may reach the file (WriteAllText) and the returned kubeconfig, nothing else.
    out.push(...secretFindingsIn(component, s.where, s.facts, new Set(), seeded, "a secret parameter"));
  }
  return out;
}

const PAIRED: readonly EffectKind[] = [
  "service",
  "firewall rule",
  "scheduled task",
  "PATH entry",
  "Defender exclusion",
];

/** The `uninstall` check for one component. */
export function uninstallFindings(component: AnalyzedComponent): Finding[] {
  const created = [...sectionEffects(component, "install"), ...sectionEffects(component, "post_upgrade")].filter(
    (e) => e.action === "create" && PAIRED.includes(e.kind),
  );
  const removed = sectionEffects(component, "uninstall").filter((e) => e.action === "remove");
  const out: Finding[] = [];
  for (const e of created) {
    if (e.key === undefined) {
      out.push({
        check: "uninstall",
        where: at(e.where, e.line),
        message: `creates a ${e.kind} whose name cannot be resolved from literals, so its removal cannot be checked`,
      });
      continue;
    }
    const key = e.key.toLowerCase();
    if (!removed.some((r) => r.kind === e.kind && r.key?.toLowerCase() === key)) {
      out.push({
        check: "uninstall",
        where: at(e.where, e.line),
        message: `install creates ${e.kind} ${e.key}, which the uninstall section never removes`,
      });
    }
  }
  return out;
}

const AGENT_VARIABLES = new Set([
  "winfleet_root",
  "winfleet_node_name",
  "winfleet_component",
  "winfleet_component_version",
  "winfleet_phase",
  "winfleet_section",
  "winfleet_previous_version",
  "kubeconfig",
]);
const WINDOWS_VARIABLES = new Set([
  "systemroot",
  "windir",
  "systemdrive",
  "programfiles",
  "programdata",
  "programfiles(x86)",
  "temp",
  "tmp",
  "path",
  "computername",
  "userprofile",
  "processor_architecture",
  "processor_architew6432",
]);

/** The `variables` check for one component. */
export function variableFindings(component: AnalyzedComponent, common: CommonModule | undefined): Finding[] {
  const read = new Map<string, string>();
  const note = (name: string, where: string): void => {
    const key = name.toLowerCase();
    if (!AGENT_VARIABLES.has(key) && !WINDOWS_VARIABLES.has(key) && !read.has(key)) read.set(key, where);
  };
  const runs = Object.values(component.sections);
  const units = [
    ...runs.flatMap((r) => r.commands.map((c) => ({ where: c.where, facts: c.facts }))),
    ...runs.flatMap((r) => r.scripts.map((s) => ({ where: s.where, facts: s.facts }))),
  ];
  for (const { where, facts } of units) {
    for (const v of facts.envReads) note(v, where);
    for (const v of helperReads(facts)) note(v, where);
    for (const c of facts.commands)
      for (const v of common?.reads.get(c.name.toLowerCase()) ?? []) note(v, `${where} (through ${c.name})`);
  }
  for (const a of component.artifacts)
    if (a.sha256Variable) note(a.sha256Variable, component.artifactsWhere ?? component.key);
  const declared = new Map(Object.keys(component.metadata.variables).map((k) => [k.toLowerCase(), k]));
  const out: Finding[] = [];
  for (const [key, where] of read)
    if (!declared.has(key))
      out.push({
        check: "variables",
        where,
        message: `reads ${key.toUpperCase()}, which ${component.key} does not declare in its metadata variables`,
      });
  for (const [key, name] of declared)
    if (!read.has(key))
      out.push({
        check: "variables",
        where: `${component.key} metadata`,
        message: `declares ${name}, which none of its sections reads`,
      });
  return out;
}
