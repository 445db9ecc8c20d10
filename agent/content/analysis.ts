/**
 * The PowerShell content as facts: every `shell: powershell` component with
 * its parsed scripts, its parsed metadata commands, its artifacts, and which
 * scripts each lifecycle section runs (the section's commands plus every
 * script they invoke, transitively). winfleet-common's module is read once:
 * the functions it exports, and the variables each of them reads. The
 * content checks and the content reference are both built on this.
 */
import { readFile } from "node:fs/promises";
import { relative } from "node:path";
import { ValidationError } from "../common";
import { type Artifact, parseArtifacts } from "./artifacts";
import { type ScriptFacts, scriptFacts } from "./powershell-facts";
import type { ComponentMetadata, Template } from "./schema";
import { validateContent } from "./validate";

/** The component whose module every other one imports. */
export const COMMON_COMPONENT = "winfleet-common";

/** The lifecycle sections, in the order they are documented. */
export const SECTION_NAMES = ["install", "uninstall", "pre_upgrade", "post_upgrade"] as const;
/** One of {@link SECTION_NAMES}. */
export type SectionName = (typeof SECTION_NAMES)[number];
const ROLES = ["lprecmds", "commands", "lpstcmds"] as const;

/** A script a component ships. */
export interface AnalyzedScript {
  /** `components/<name>/<version>/files/…`, for messages. */
  readonly where: string;
  /** The path on the host below the content root, backslashed: `k\winfleet\kubelet\install.ps1`. */
  readonly hostPath: string;
  readonly facts: ScriptFacts;
}

/** A metadata command. */
export interface AnalyzedCommand {
  readonly where: string;
  readonly section: SectionName;
  readonly role: (typeof ROLES)[number];
  readonly text: string;
  readonly facts: ScriptFacts;
}

/** What one section runs. */
export interface SectionRun {
  readonly commands: readonly AnalyzedCommand[];
  readonly scripts: readonly AnalyzedScript[];
}

/** A PowerShell component. */
export interface AnalyzedComponent {
  readonly key: string;
  readonly dir: string;
  readonly metadata: ComponentMetadata;
  readonly scripts: readonly AnalyzedScript[];
  readonly commands: readonly AnalyzedCommand[];
  readonly artifacts: readonly Artifact[];
  /** Relative location of artifacts.json, when the component has one. */
  readonly artifactsWhere?: string;
  readonly sections: Readonly<Record<SectionName, SectionRun>>;
}

/** winfleet-common's module, as the checks need it. */
export interface CommonModule {
  /** Every function defined in the module's files, lower-case. */
  readonly defined: ReadonlySet<string>;
  /** The functions it exports, lower-case. */
  readonly exported: ReadonlySet<string>;
  /** Exported and private functions whose `return` gives a value, lower-case. */
  readonly returnsValue: ReadonlySet<string>;
  /**
   * Variables each function reads, itself or through the module functions it calls (lower-case keys, names as written).
   */
  readonly reads: ReadonlyMap<string, ReadonlySet<string>>;
}

/** The whole content tree, analysed. */
export interface AnalyzedContent {
  readonly dir: string;
  readonly templates: readonly Template[];
  readonly components: readonly AnalyzedComponent[];
  readonly common?: CommonModule;
}

const SCRIPT = /\.(ps1|psm1)$/i;

/** A script path as written in a command (`'k\winfleet\x\install.ps1'`), normalised for matching. */
export function hostKey(path: string): string {
  return path.replace(/\//g, "\\").replace(/^\\+/, "").toLowerCase();
}

/**
 * Reads and analyses every PowerShell component under `contentDir`; throws when the content itself does not validate.
 */
export async function analyzeContent(contentDir: string): Promise<AnalyzedContent> {
  const checked = await validateContent(contentDir);
  // PowerShell syntax errors are the checks' to report (check "syntax"); anything else stops here.
  const errors = checked.problems.filter(
    (p) => p.severity === "error" && !p.message.startsWith("PowerShell syntax error"),
  );
  if (errors.length > 0) throw new ValidationError(`content in ${contentDir}`, errors);
  const rel = (file: string): string => relative(contentDir, file).split("\\").join("/");
  const components: AnalyzedComponent[] = [];
  for (const { source, metadata } of checked.components) {
    if (metadata.shell !== "powershell") continue;
    const scripts: AnalyzedScript[] = [];
    let artifacts: Artifact[] = [];
    let artifactsWhere: string | undefined;
    for (const f of source.files) {
      if (SCRIPT.test(f.rel))
        scripts.push({
          where: rel(f.abs),
          hostPath: f.rel.split("/").join("\\"),
          facts: await scriptFacts(await readFile(f.abs, "utf8")),
        });
      if (f.rel.endsWith("/artifacts.json")) {
        artifactsWhere = rel(f.abs);
        artifacts = parseArtifacts(await readFile(f.abs, "utf8"), artifactsWhere);
      }
    }
    const commands: AnalyzedCommand[] = [];
    for (const section of SECTION_NAMES) {
      for (const role of ROLES) {
        for (const [i, text] of metadata[section][role].entries()) {
          commands.push({
            where: `${rel(source.metadataFile)}: ${section}.${role}[${i}]`,
            section,
            role,
            text,
            facts: await scriptFacts(text),
          });
        }
      }
    }
    components.push({
      key: `${metadata.name}_${metadata.version}`,
      dir: source.dir,
      metadata,
      scripts,
      commands,
      artifacts,
      ...(artifactsWhere ? { artifactsWhere } : {}),
      sections: sectionRuns(scripts, commands),
    });
  }
  const commonComponent = components.find((c) => c.metadata.name === COMMON_COMPONENT);
  return {
    dir: contentDir,
    templates: checked.templates,
    components,
    ...(commonComponent ? { common: commonModule(commonComponent) } : {}),
  };
}

/**
 * The scripts a set of facts invokes by path (`& 'x.ps1'`, `& (Join-Path … 'x.ps1')`, `& $var` where `$var` holds one).
 */
export function invokedScriptPaths(facts: ScriptFacts): string[] {
  const out: string[] = [];
  for (const c of facts.commands) {
    if (c.operator === undefined) continue;
    const strings = c.targetKind === "variable" ? stringsOfVariable(facts, c.name) : c.targetStrings;
    out.push(...strings.filter((s) => /\.ps1$/i.test(s)));
  }
  return out;
}

// Commands that build a path or name out of their literal arguments; when the
// value is any other command, its literals are that command's arguments (a
// variable name, a URL), not the value.
const VALUE_BUILDERS = new Set(["join-path", "get-winfleetpath", "get-winfleetroot", "split-path"]);

/**
 * String literals that flow into `$variable` through its assignments in the
 * same script (followed through other variables): the literals of a string,
 * array, format or Join-Path expression, not the arguments of other commands.
 */
export function stringsOfVariable(facts: ScriptFacts, variable: string, seen = new Set<string>()): string[] {
  const name = variable.replace(/^[$@]/, "").toLowerCase();
  if (seen.has(name)) return [];
  seen.add(name);
  const out: string[] = [];
  for (const a of facts.assignments.filter(
    (x) => x.variable === name && (x.valueCommand === undefined || VALUE_BUILDERS.has(x.valueCommand.toLowerCase())),
  )) {
    out.push(...a.strings);
    for (const v of a.variables) out.push(...stringsOfVariable(facts, v, seen));
  }
  return out;
}

function sectionRuns(
  scripts: readonly AnalyzedScript[],
  commands: readonly AnalyzedCommand[],
): Record<SectionName, SectionRun> {
  const byKey = new Map(scripts.map((s) => [hostKey(s.hostPath), s]));
  const resolve = (path: string): AnalyzedScript | undefined => {
    const key = hostKey(path);
    for (const [k, s] of byKey) if (k === key || k.endsWith(`\\${key}`)) return s;
    return undefined;
  };
  const runs = {} as Record<SectionName, SectionRun>;
  for (const section of SECTION_NAMES) {
    const own = commands.filter((c) => c.section === section);
    const reached: AnalyzedScript[] = [];
    const queue = own.flatMap((c) => invokedScriptPaths(c.facts));
    while (queue.length > 0) {
      const script = resolve(queue.shift() as string);
      if (!script || reached.includes(script)) continue;
      reached.push(script);
      queue.push(...invokedScriptPaths(script.facts));
    }
    runs[section] = { commands: own, scripts: reached };
  }
  return runs;
}

/**
 * Variable names a script reads through winfleet's variable helpers (`Get-WinfleetVariable -Name 'X'`, or a `$name`
 * assigned literals).
 */
export function helperReads(facts: ScriptFacts): string[] {
  return facts.commands
    .filter((c) => /^(get|assert)-winfleetvariable$/i.test(c.name))
    .flatMap((c) => {
      const arg = c.args.find((a) => a.parameter === "name") ?? c.args.find((a) => a.parameter === undefined);
      if (!arg) return [];
      return arg.strings.length > 0 ? arg.strings : arg.variables.flatMap((v) => stringsOfVariable(facts, v));
    });
}

/** Every script and metadata command of a component, with where to report it. */
export function unitsOfComponent(component: AnalyzedComponent): { where: string; facts: ScriptFacts }[] {
  return [
    ...component.scripts.map((s) => ({ where: s.where, facts: s.facts })),
    ...component.commands.map((c) => ({ where: c.where, facts: c.facts })),
  ];
}

function commonModule(component: AnalyzedComponent): CommonModule {
  const defined = new Set<string>();
  const returnsValue = new Set<string>();
  const exported = new Set<string>();
  const direct = new Map<string, Set<string>>();
  const calls = new Map<string, Set<string>>();
  for (const s of component.scripts) {
    for (const f of s.facts.functions) {
      const name = f.name.toLowerCase();
      defined.add(name);
      if (f.returnsValue) returnsValue.add(name);
      direct.set(name, new Set());
      calls.set(name, new Set());
    }
    for (const c of s.facts.commands) {
      if (c.name.toLowerCase() === "export-modulemember")
        for (const a of c.args) for (const n of a.strings) exported.add(n.toLowerCase());
    }
  }
  for (const s of component.scripts) {
    for (const c of s.facts.commands) {
      const fn = c.inFunction?.toLowerCase();
      if (fn === undefined) continue;
      if (/^(get|assert)-winfleetvariable$/i.test(c.name)) {
        for (const n of (c.args.find((a) => a.parameter === "name") ?? c.args.find((a) => a.parameter === undefined))
          ?.strings ?? [])
          direct.get(fn)?.add(n);
      }
      if (defined.has(c.name.toLowerCase())) calls.get(fn)?.add(c.name.toLowerCase());
    }
  }
  const reads = new Map<string, Set<string>>();
  const closure = (fn: string, seen: Set<string>): Set<string> => {
    const out = new Set(direct.get(fn) ?? []);
    for (const callee of calls.get(fn) ?? []) {
      if (seen.has(callee)) continue;
      seen.add(callee);
      for (const v of closure(callee, seen)) out.add(v);
    }
    return out;
  };
  for (const fn of defined) reads.set(fn, closure(fn, new Set([fn])));
  return { defined, exported, returnsValue, reads };
}
