/**
 * What a component changes on a host, read from the winfleet-common calls in
 * the scripts its sections run: services, firewall rules, startup tasks, PATH
 * entries, Defender exclusions, Windows features, registry values and the
 * files it writes. Names and paths are resolved from string literals through
 * the script's assignments (`$x = Join-Path $root 'k\kubelet.exe'`), which is
 * why content passes them as literals: what cannot be resolved cannot be
 * checked, and the checks say so.
 */
import { type AnalyzedComponent, type SectionName, stringsOfVariable } from "./analysis";
import type { ScriptArgument, ScriptCommand, ScriptFacts } from "./powershell-facts";

/** The kinds of host change the content reference lists. */
export const EFFECT_KINDS = [
  "service",
  "firewall rule",
  "scheduled task",
  "PATH entry",
  "Defender exclusion",
  "Windows feature",
  "registry value",
  "machine environment variable",
  "file",
] as const;
/** One of {@link EFFECT_KINDS}. */
export type EffectKind = (typeof EFFECT_KINDS)[number];

/** One change a section makes (or takes back). */
export interface HostEffect {
  readonly kind: EffectKind;
  readonly action: "create" | "remove";
  /** The resolved name or path, or undefined when it could not be resolved. */
  readonly key?: string;
  /** Extra detail for the reference: ports, the binary path, the registry value. */
  readonly detail: string;
  readonly where: string;
  readonly line: number;
}

interface Rule {
  readonly kind: EffectKind;
  readonly action: "create" | "remove";
  readonly parameter: string;
  readonly path?: boolean;
  readonly detail?: (facts: ScriptFacts, command: ScriptCommand) => string;
}

const leafNames = (strings: readonly string[]): string[] => [
  ...new Set(strings.filter((s) => /\.(exe|ps1)$/i.test(s)).map((s) => s.split(/[\\/]/).pop() ?? s)),
];
const resolved = (facts: ScriptFacts, command: ScriptCommand, parameter: string): string[] => {
  const arg = argumentFor(command, parameter);
  return arg ? [...arg.strings, ...arg.variables.flatMap((v) => stringsOfVariable(facts, v))] : [];
};

function serviceDetail(facts: ScriptFacts, command: ScriptCommand): string {
  const hosted = /hostedservice$/i.test(command.name);
  const runs = leafNames([
    ...resolved(facts, command, "binarypath"),
    ...resolved(facts, command, "binarypathname"),
    ...resolved(facts, command, "program"),
    ...resolved(facts, command, "arguments"),
  ]);
  const depends = argumentFor(command, "dependson")?.strings ?? [];
  const start = argumentFor(command, "startuptype")?.strings[0] ?? "Automatic";
  return [
    `${hosted ? "under NSSM, " : ""}runs ${runs.join(" ") || "(computed)"}`,
    depends.length > 0 ? `after ${depends.join(", ")}` : "",
    `start ${start}`,
    "restarts on failure",
  ]
    .filter((x) => x !== "")
    .join("; ");
}

function firewallDetail(_facts: ScriptFacts, command: ScriptCommand): string {
  const protocol = argumentFor(command, "protocol")?.strings[0] ?? "";
  const ports = (argumentFor(command, "localport")?.text ?? "").replace(/^@\(|\)$/g, "");
  return `inbound ${protocol} ${ports}`.trim();
}

// "…\$protocol\$side" with $protocol and $side looping over literals → every combination.
function expandTemplate(facts: ScriptFacts, template: string, depth = 0): string[] {
  const m = /\$(\w+)/.exec(template);
  if (!m || depth > 4) return [template];
  const values = facts.assignments.filter((a) => a.variable === (m[1] ?? "").toLowerCase()).flatMap((a) => a.strings);
  if (values.length === 0) return [template];
  return values.flatMap((v) => expandTemplate(facts, template.replace(m[0], v), depth + 1)).slice(0, 16);
}

function registryDetail(facts: ScriptFacts, command: ScriptCommand): string {
  const arg = argumentFor(command, "path");
  const direct = arg
    ? [
        ...arg.strings,
        ...arg.variables.flatMap((v) => facts.assignments.filter((a) => a.variable === v).flatMap((a) => a.strings)),
      ]
    : [];
  const paths = [...new Set(direct.flatMap((p) => expandTemplate(facts, p)))];
  const value = argumentFor(command, "value")?.text;
  const where = paths.length > 0 ? `under ${paths.join(" and ")}` : "";
  return value === undefined ? where : `${value} ${where}`.trim();
}

function taskDetail(facts: ScriptFacts, command: ScriptCommand): string {
  return `runs ${leafNames(resolved(facts, command, "scriptpath")).join(" ") || "(computed)"} at startup as SYSTEM`;
}

// Command (lower-case) → what it does. Several parameters make several effects (Defender paths and processes).
const RULES: Readonly<Record<string, readonly Rule[]>> = {
  "set-winfleetservice": [{ kind: "service", action: "create", parameter: "name", detail: serviceDetail }],
  "set-winfleethostedservice": [{ kind: "service", action: "create", parameter: "name", detail: serviceDetail }],
  "new-service": [{ kind: "service", action: "create", parameter: "name", detail: serviceDetail }],
  "remove-winfleetservice": [{ kind: "service", action: "remove", parameter: "name" }],
  "set-winfleetfirewallrule": [{ kind: "firewall rule", action: "create", parameter: "name", detail: firewallDetail }],
  "new-netfirewallrule": [{ kind: "firewall rule", action: "create", parameter: "name", detail: firewallDetail }],
  "remove-winfleetfirewallrule": [{ kind: "firewall rule", action: "remove", parameter: "name" }],
  "remove-netfirewallrule": [{ kind: "firewall rule", action: "remove", parameter: "name" }],
  "set-winfleetscheduledtask": [{ kind: "scheduled task", action: "create", parameter: "name", detail: taskDetail }],
  "register-scheduledtask": [{ kind: "scheduled task", action: "create", parameter: "taskname" }],
  "remove-winfleetscheduledtask": [{ kind: "scheduled task", action: "remove", parameter: "name" }],
  "unregister-scheduledtask": [{ kind: "scheduled task", action: "remove", parameter: "taskname" }],
  "add-winfleetpathentry": [{ kind: "PATH entry", action: "create", parameter: "path", path: true }],
  "remove-winfleetpathentry": [{ kind: "PATH entry", action: "remove", parameter: "path", path: true }],
  "add-winfleetdefenderexclusion": [
    { kind: "Defender exclusion", action: "create", parameter: "path", detail: () => "path" },
    { kind: "Defender exclusion", action: "create", parameter: "process", detail: () => "process" },
  ],
  "remove-winfleetdefenderexclusion": [
    { kind: "Defender exclusion", action: "remove", parameter: "path", detail: () => "path" },
    { kind: "Defender exclusion", action: "remove", parameter: "process", detail: () => "process" },
  ],
  "enable-winfleetfeature": [
    {
      kind: "Windows feature",
      action: "create",
      parameter: "name",
      detail: () => "enabled (a restart when just enabled)",
    },
  ],
  "disable-winfleetfeature": [
    {
      kind: "Windows feature",
      action: "remove",
      parameter: "name",
      detail: () => "disabled (when the component's variables ask)",
    },
  ],
  "set-winfleetmachineenvironment": [{ kind: "machine environment variable", action: "create", parameter: "name" }],
  "remove-winfleetmachineenvironment": [{ kind: "machine environment variable", action: "remove", parameter: "name" }],
  "set-winfleetregistryvalue": [
    { kind: "registry value", action: "create", parameter: "name", detail: registryDetail },
  ],
  "remove-winfleetregistryvalue": [
    { kind: "registry value", action: "remove", parameter: "name", detail: registryDetail },
  ],
  "set-winfleetfilecontent": [{ kind: "file", action: "create", parameter: "path", path: true }],
  "set-winfleetsecretfile": [
    {
      kind: "file",
      action: "create",
      parameter: "path",
      path: true,
      detail: () => "holds a secret; SYSTEM and Administrators only",
    },
  ],
};

/** The argument bound to `parameter`, by name or (for the first parameter a helper takes) by position. */
export function argumentFor(command: ScriptCommand, parameter: string): ScriptArgument | undefined {
  return (
    command.args.find((a) => a.parameter === parameter) ??
    (parameter === "name" || parameter === "path" || parameter === "taskname"
      ? command.args.find((a) => a.parameter === undefined)
      : undefined)
  );
}

const ROOT_COMMANDS = /^(get-winfleetroot)$/i;

/**
 * The content-root-relative path an expression denotes ("/etc/kubernetes/kubelet.conf"),
 * or undefined: `Join-Path <base> 'literal'…`, `Get-WinfleetPath -Relative 'x'`,
 * `$env:WINFLEET_ROOT`, `Get-WinfleetRoot`, and variables assigned from those.
 */
export function evaluatePath(
  facts: ScriptFacts,
  value: { text: string; strings: readonly string[]; variables: readonly string[] },
  depth = 0,
): string | undefined {
  if (depth > 8) return undefined;
  const text = value.text.trim();
  if (/\$\(|\$\w+\s*\+/.test(text) || value.strings.some((s) => /\$/.test(s))) return undefined;
  const literal = value.strings.map((s) => s.replace(/\//g, "\\"));
  if (/Get-WinfleetPath/i.test(text)) return normalisePath(literal.join("\\"));
  if (/^\(?\s*(Get-WinfleetRoot|\$env:WINFLEET_ROOT)\s*\)?$/i.test(text)) return "/";
  const bases = value.variables.filter((v) => v !== "env:winfleet_root");
  let base: string | undefined;
  if (bases.length === 0) {
    if (value.variables.includes("env:winfleet_root") || /Get-WinfleetRoot/i.test(text)) base = "/";
    else if (/^Join-Path\b|^\(Join-Path\b/i.test(text)) return undefined;
    else return literal.length === 1 ? normalisePath(literal[0] as string) : undefined;
  } else if (bases.length === 1) {
    base = variablePath(facts, bases[0] as string, depth + 1);
  }
  if (base === undefined) return undefined;
  if (literal.length === 0) return base;
  return normalisePath(`${base}\\${literal.join("\\")}`);
}

function variablePath(facts: ScriptFacts, variable: string, depth: number): string | undefined {
  const assignments = facts.assignments.filter((a) => a.variable === variable);
  if (assignments.length !== 1) return undefined;
  const a = assignments[0];
  if (!a) return undefined;
  if (a.commands.some((c) => ROOT_COMMANDS.test(c)) && a.strings.length === 0) return "/";
  return evaluatePath(facts, { text: a.valueText, strings: a.strings, variables: a.variables }, depth);
}

function normalisePath(p: string): string {
  const parts = p
    .replace(/\\/g, "/")
    .split("/")
    .filter((s) => s !== "" && s !== ".");
  return `/${parts.join("/")}`;
}

/** Resolved values of a name-like argument: its literals, or the literals its variable was assigned. */
export function argumentNames(facts: ScriptFacts, arg: ScriptArgument | undefined): string[] {
  if (!arg) return [];
  if (arg.strings.length > 0 && arg.variables.length === 0) return [...arg.strings];
  if (arg.variables.length === 1 && arg.strings.length === 0 && /^\$[\w:]+$/.test(arg.text.trim()))
    return stringsOfVariable(facts, arg.variables[0] as string);
  return [];
}

function effectsOf(facts: ScriptFacts, where: string): HostEffect[] {
  const out: HostEffect[] = [];
  for (const c of facts.commands) {
    for (const rule of RULES[c.name.toLowerCase()] ?? []) {
      const arg = argumentFor(c, rule.parameter);
      if (!arg) continue;
      const detail = rule.detail ? rule.detail(facts, c) : "";
      if (rule.path) {
        const key = evaluatePath(facts, arg);
        out.push({ kind: rule.kind, action: rule.action, ...(key ? { key } : {}), detail, where, line: c.line });
        continue;
      }
      const names = rule.kind === "Defender exclusion" ? defenderKeys(facts, arg) : argumentNames(facts, arg);
      if (names.length === 0) out.push({ kind: rule.kind, action: rule.action, detail, where, line: c.line });
      for (const key of names) out.push({ kind: rule.kind, action: rule.action, key, detail, where, line: c.line });
    }
  }
  return out;
}

// Defender exclusions are lists of root-relative paths: each literal is one.
function defenderKeys(_facts: ScriptFacts, arg: ScriptArgument): string[] {
  return arg.strings.map((s) => normalisePath(s));
}

/** The host effects of the scripts and commands one section runs. */
export function sectionEffects(component: AnalyzedComponent, section: SectionName): HostEffect[] {
  const run = component.sections[section];
  return [
    ...run.commands.flatMap((c) => effectsOf(c.facts, c.where)),
    ...run.scripts.flatMap((s) => effectsOf(s.facts, s.where)),
  ];
}
