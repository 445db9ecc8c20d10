/**
 * The checks Windows content must pass without a Windows host, each over the
 * scripts' parse trees (see {@link scriptFacts}):
 *
 * - `syntax`: every script and metadata command parses with zero errors;
 * - `commands`: every command is a Windows PowerShell 5.1 cmdlet from the
 *   allowlist (data/powershell-allowlist.json), a winfleet-common function, a
 *   function of the same script, or a named executable; no parameter only
 *   PowerShell 7 has;
 * - `downloads`: only winfleet-common's Invoke-WinfleetHttpGet touches the
 *   network, only the two verifying helpers call it, they check the digest
 *   before the file is kept, and nothing outside winfleet-common unpacks or
 *   runs a download;
 * - `native-exit-codes`: a native program run directly is followed by a look
 *   at $LASTEXITCODE (Invoke-WinfleetNative does that for everything else);
 * - `exits`: a section's scripts end in `exit`, and a command that runs one
 *   passes its exit code on;
 * - `outputs`: a winfleet-common function's return value is never left to
 *   fall into the step's output;
 * - `kubelet-config`: a KubeletConfiguration a script builds passes the
 *   kubelet's own validation rules (./kubelet-config), and is plain data so
 *   that it can be read;
 * plus `secrets`, `uninstall` and `variables` (./effect-checks).
 */
import allowlistJson from "./data/powershell-allowlist.json";
import { z } from "zod";
import {
  type AnalyzedComponent,
  type AnalyzedContent,
  COMMON_COMPONENT,
  hostKey,
  stringsOfVariable,
  unitsOfComponent,
} from "./analysis";
import { secretFindings, uninstallFindings, variableFindings } from "./effect-checks";
import { CHECKS, type Finding } from "./findings";
import { kubeletConfigurationProblems } from "./kubelet-config";
import type { PsValue } from "./powershell-literal";
import type { ScriptCommand, ScriptFacts } from "./powershell-facts";

const allowlistSchema = z.object({
  cmdlets: z.array(z.string()),
  powershell7OnlyParameters: z.record(z.string(), z.array(z.string())),
  executables: z.array(z.string()),
  network: z.object({ commands: z.array(z.string()), types: z.array(z.string()) }),
  unpack: z.array(z.string()),
});

/** The allowlist, lower-cased for lookups. */
export interface Allowlist {
  readonly cmdlets: ReadonlySet<string>;
  readonly powershell7Only: ReadonlyMap<string, ReadonlySet<string>>;
  readonly executables: ReadonlySet<string>;
  readonly networkCommands: ReadonlySet<string>;
  readonly networkTypes: ReadonlySet<string>;
  readonly unpack: ReadonlySet<string>;
}

const lower = (xs: readonly string[]): Set<string> => new Set(xs.map((x) => x.toLowerCase()));

/** Parses an allowlist document (the shipped one by default). */
export function loadAllowlist(doc: unknown = allowlistJson): Allowlist {
  const a = allowlistSchema.parse(doc);
  return {
    cmdlets: lower(a.cmdlets),
    powershell7Only: new Map(Object.entries(a.powershell7OnlyParameters).map(([k, v]) => [k.toLowerCase(), lower(v)])),
    executables: lower(a.executables),
    networkCommands: lower(a.network.commands),
    networkTypes: lower(a.network.types),
    unpack: lower(a.unpack),
  };
}

const at = (where: string, line: number): string =>
  /\.(ps1|psm1)$/i.test(where) ? `${where}:${line}` : `${where} line ${line}`;
const leaf = (path: string): string => (path.split(/[\\/]/).pop() ?? path).toLowerCase();

// Functions whose parameters content may invoke with `&`: the native runner and the condition poller.
const INVOKERS: Readonly<Record<string, string>> = {
  "invoke-winfleetnative": "filepath",
  "wait-winfleetcondition": "condition",
};
const HTTP_GET = "invoke-winfleethttpget";
const VERIFYING_FETCHERS = new Set(["save-winfleetdownload", "get-winfleetclusterca"]);

interface Context {
  readonly content: AnalyzedContent;
  readonly component: AnalyzedComponent;
  readonly allowlist: Allowlist;
  readonly isCommon: boolean;
}

/** What an invocation target resolves to: the literals it holds or was assigned. */
function targetStrings(facts: ScriptFacts, c: ScriptCommand): string[] {
  return c.targetKind === "variable" ? stringsOfVariable(facts, c.name) : [...c.targetStrings];
}

function shippedScript(ctx: Context, path: string): boolean {
  const key = hostKey(path);
  const candidates = [ctx.component, ...ctx.content.components.filter((c) => c.metadata.name === COMMON_COMPONENT)];
  return candidates.some((c) =>
    c.scripts.some((s) => hostKey(s.hostPath) === key || hostKey(s.hostPath).endsWith(`\\${key}`)),
  );
}

function allowedTarget(ctx: Context, path: string): boolean {
  return ctx.allowlist.executables.has(leaf(path)) || (/\.ps1$/i.test(path) && shippedScript(ctx, path));
}

/** The native program a command runs directly, if any (not through Invoke-WinfleetNative). */
function nativeTarget(ctx: Context, facts: ScriptFacts, c: ScriptCommand): string | undefined {
  if (c.operator === undefined) return /\.exe$/i.test(c.name) ? leaf(c.name) : undefined;
  return targetStrings(facts, c)
    .map(leaf)
    .find((s) => s.endsWith(".exe") && ctx.allowlist.executables.has(s));
}

function commandFindings(ctx: Context, where: string, facts: ScriptFacts): Finding[] {
  const out: Finding[] = [];
  const local = new Set(facts.functions.map((f) => f.name.toLowerCase()));
  const common = ctx.content.common;
  for (const c of facts.commands) {
    const name = c.name.toLowerCase();
    if (c.operator !== undefined && c.targetKind !== "name") {
      const invoker = c.inFunction ? INVOKERS[c.inFunction.toLowerCase()] : undefined;
      if (
        ctx.isCommon &&
        invoker !== undefined &&
        c.targetKind === "variable" &&
        c.name.replace(/^\$/, "").toLowerCase() === invoker
      )
        continue;
      const strings = targetStrings(facts, c);
      if (!strings.some((s) => allowedTarget(ctx, s))) {
        out.push({
          check: "commands",
          where: at(where, c.line),
          message: `runs ${c.operator} ${c.name}, which resolves to no shipped script and no named executable (${strings.join(", ") || "nothing it could resolve"})`,
        });
      }
      continue;
    }
    if (/[\\/]|\.exe$|\.ps1$/i.test(name)) {
      if (!ctx.allowlist.executables.has(leaf(name)) && !shippedScript(ctx, name))
        out.push({
          check: "commands",
          where: at(where, c.line),
          message: `runs ${c.name}, which is not a named executable in powershell-allowlist.json`,
        });
      continue;
    }
    const known =
      local.has(name) ||
      (ctx.isCommon ? common?.defined.has(name) : common?.exported.has(name)) ||
      ctx.allowlist.cmdlets.has(name);
    if (!known) {
      const hint =
        common?.defined.has(name) && !ctx.isCommon ? " (winfleet-common defines it but does not export it)" : "";
      out.push({
        check: "commands",
        where: at(where, c.line),
        message: `calls ${c.name}, which is not a Windows PowerShell 5.1 cmdlet (powershell-allowlist.json), a winfleet-common function or a function of this script${hint}`,
      });
    }
    for (const a of c.args) {
      if (a.parameter !== undefined && ctx.allowlist.powershell7Only.get(name)?.has(a.parameter)) {
        out.push({
          check: "commands",
          where: at(where, c.line),
          message: `passes -${a.parameter} to ${c.name}, a parameter only PowerShell 7 has`,
        });
      }
    }
    if (name === "invoke-winfleetnative") {
      const file = c.args.find((a) => a.parameter === "filepath") ?? c.args.find((a) => a.parameter === undefined);
      const strings = file
        ? file.strings.length > 0
          ? file.strings
          : file.variables.flatMap((v) => stringsOfVariable(facts, v))
        : [];
      if (!strings.some((s) => ctx.allowlist.executables.has(leaf(s)))) {
        out.push({
          check: "commands",
          where: at(where, c.line),
          message: `Invoke-WinfleetNative runs ${file?.text ?? "nothing"}, which resolves to no named executable`,
        });
      }
    }
  }
  return out;
}

function downloadFindings(ctx: Context, where: string, facts: ScriptFacts): Finding[] {
  const out: Finding[] = [];
  const inHttpGet = (fn: string | undefined): boolean => ctx.isCommon && fn?.toLowerCase() === HTTP_GET;
  for (const c of facts.commands) {
    const name = c.name.toLowerCase();
    const native = nativeTarget(ctx, facts, c);
    if (
      (ctx.allowlist.networkCommands.has(name) ||
        (native !== undefined && ctx.allowlist.networkCommands.has(native))) &&
      !inHttpGet(c.inFunction)
    ) {
      out.push({
        check: "downloads",
        where: at(where, c.line),
        message: `fetches with ${c.name} outside winfleet-common's verified download (Get-WinfleetArtifact / Save-WinfleetDownload)`,
      });
    }
    if (name === HTTP_GET && !(ctx.isCommon && VERIFYING_FETCHERS.has(c.inFunction?.toLowerCase() ?? ""))) {
      out.push({
        check: "downloads",
        where: at(where, c.line),
        message:
          "calls Invoke-WinfleetHttpGet, which only Save-WinfleetDownload and Get-WinfleetClusterCA may call (they verify what it fetches)",
      });
    }
    const unpacks = ctx.allowlist.unpack.has(name) || (native !== undefined && ctx.allowlist.unpack.has(native));
    if (unpacks && !ctx.isCommon)
      out.push({
        check: "downloads",
        where: at(where, c.line),
        message: `unpacks or runs with ${c.name}; only winfleet-common's Expand-WinfleetArtifact may, after checking the digest again`,
      });
  }
  for (const t of facts.types) {
    if (ctx.allowlist.networkTypes.has(t.name) && !inHttpGet(t.inFunction)) {
      out.push({
        check: "downloads",
        where: at(where, t.line),
        message: `uses [${t.name}], which fetches from the network, outside winfleet-common's verified download`,
      });
    }
  }
  return out;
}

// The verifying helpers must look at the digest before they keep or unpack anything.
function verificationFindings(ctx: Context): Finding[] {
  if (!ctx.isCommon) return [];
  const out: Finding[] = [];
  const DIGEST = /^(Get-FileHash|Test-WinfleetFileHash)$/i;
  for (const s of ctx.component.scripts) {
    const lines = (fn: string, re: RegExp): number[] =>
      s.facts.commands.filter((c) => c.inFunction?.toLowerCase() === fn && re.test(c.name)).map((c) => c.line);
    // Save-WinfleetDownload: after the fetch, a digest check and a throw come before the file is moved into place.
    const fetched = lines("save-winfleetdownload", /^Invoke-WinfleetHttpGet$/i);
    if (fetched.length > 0) {
      const after = Math.max(...fetched);
      const check = Math.min(...lines("save-winfleetdownload", DIGEST).filter((l) => l > after));
      const keep = Math.min(...lines("save-winfleetdownload", /^Move-Item$/i).filter((l) => l > after));
      const refusal = s.facts.emissions.some(
        (e) =>
          e.kind === "throw" &&
          e.inFunction?.toLowerCase() === "save-winfleetdownload" &&
          e.line > check &&
          e.line < keep,
      );
      if (!(check < keep) || !refusal)
        out.push({
          check: "downloads",
          where: at(s.where, after),
          message:
            "save-winfleetdownload must check the digest of what it fetched, and throw on a mismatch, before it keeps the file (Move-Item)",
        });
    }
    // Expand-WinfleetArtifact: the digest again before anything is unpacked or copied.
    const used = lines("expand-winfleetartifact", /^(Invoke-WinfleetNative|Copy-Item)$/i);
    if (
      used.length > 0 &&
      !(Math.min(...lines("expand-winfleetartifact", /^Test-WinfleetFileHash$/i)) < Math.min(...used))
    ) {
      out.push({
        check: "downloads",
        where: at(s.where, Math.min(...used)),
        message:
          "expand-winfleetartifact must check the digest again (Test-WinfleetFileHash) before it unpacks or copies",
      });
    }
  }
  if (ctx.content.common?.exported.has(HTTP_GET))
    out.push({
      check: "downloads",
      where: ctx.component.key,
      message: "exports Invoke-WinfleetHttpGet: only the verifying helpers may fetch",
    });
  return out;
}

function nativeExitFindings(ctx: Context, where: string, facts: ScriptFacts): Finding[] {
  const out: Finding[] = [];
  for (const c of facts.commands) {
    if (nativeTarget(ctx, facts, c) === undefined) continue;
    if (ctx.isCommon && c.inFunction?.toLowerCase() === "invoke-winfleetnative") continue;
    const checked =
      /\$LASTEXITCODE/i.test(c.statementText.replace(c.text, "")) || /\$LASTEXITCODE/i.test(c.nextStatementText ?? "");
    if (!checked)
      out.push({
        check: "native-exit-codes",
        where: at(where, c.line),
        message: `runs ${c.name} and never looks at $LASTEXITCODE (use Invoke-WinfleetNative, or check it in the next statement)`,
      });
  }
  return out;
}

function exitFindings(component: AnalyzedComponent): Finding[] {
  const out: Finding[] = [];
  const entry = new Set(Object.values(component.sections).flatMap((run) => run.scripts));
  for (const s of entry) {
    if (!/^exit\b/i.test(s.facts.lastStatement.trim()))
      out.push({
        check: "exits",
        where: s.where,
        message: "a section runs this script, but it does not end in `exit` (its exit code would be whatever ran last)",
      });
  }
  for (const c of component.commands) {
    const runs = c.facts.commands.some(
      (x) => x.operator !== undefined && /\.ps1$/i.test(targetStrings(c.facts, x).join(" ")),
    );
    if (runs && !/^exit\s+\$LASTEXITCODE$/i.test(c.facts.lastStatement.trim()))
      out.push({
        check: "exits",
        where: c.where,
        message:
          "runs a script but does not end in `exit $LASTEXITCODE`, so the script's exit code (3010 included) is lost",
      });
  }
  return out;
}

function outputFindings(ctx: Context, where: string, facts: ScriptFacts): Finding[] {
  const returning = new Set([
    ...(ctx.content.common?.returnsValue ?? []),
    ...facts.functions.filter((f) => f.returnsValue).map((f) => f.name.toLowerCase()),
  ]);
  return facts.commands
    .filter((c) => c.use === "statement" && returning.has(c.name.toLowerCase()))
    .map((c) => ({
      check: "outputs" as const,
      where: at(where, c.line),
      message: `${c.name} returns a value that would fall into the output${c.inFunction ? ` (and into ${c.inFunction}'s return value)` : ""}: assign it, or discard it with $null =`,
    }));
}

// A hashtable with kind = 'KubeletConfiguration' is what the kubelet reads at start: it must pass its rules.
function kubeletConfigFindings(where: string, facts: ScriptFacts): Finding[] {
  const out: Finding[] = [];
  for (const a of facts.assignments) {
    if (!a.strings.includes("KubeletConfiguration")) continue;
    const config = a.literal;
    if (config === undefined || typeof config !== "object" || config === null || Array.isArray(config)) {
      out.push({
        check: "kubelet-config",
        where: at(where, a.line),
        message: `$${a.variable} builds a KubeletConfiguration from more than plain data (hashtables, arrays, strings, numbers, booleans, variables, Join-Path, -split), so it cannot be checked against the kubelet's rules`,
      });
      continue;
    }
    const c = config as { readonly [key: string]: PsValue };
    if (c.kind !== "KubeletConfiguration") continue;
    // A field set from a variable is checked with each plain value the script gives that variable.
    const variants: { readonly [key: string]: PsValue }[] = [c];
    for (const [field, value] of Object.entries(c)) {
      if (typeof value !== "string" || !value.startsWith("$")) continue;
      for (const other of facts.assignments)
        if (other.variable === value.slice(1) && other.literal !== undefined)
          variants.push({ ...c, [field]: other.literal });
    }
    const problems = new Set(variants.flatMap((v) => kubeletConfigurationProblems(v)));
    for (const problem of problems)
      out.push({
        check: "kubelet-config",
        where: at(where, a.line),
        message: `the kubelet refuses this configuration: ${problem}`,
      });
  }
  return out;
}

/** Runs every check over the analysed content. */
export function checkContent(content: AnalyzedContent, allowlist: Allowlist = loadAllowlist()): Finding[] {
  const out: Finding[] = [];
  for (const component of content.components) {
    const ctx: Context = { content, component, allowlist, isCommon: component.metadata.name === COMMON_COMPONENT };
    for (const { where, facts } of unitsOfComponent(component)) {
      out.push(
        ...facts.syntaxErrors.map((e) => ({
          check: "syntax" as const,
          where,
          message: `PowerShell syntax error at ${e}`,
        })),
      );
      out.push(
        ...commandFindings(ctx, where, facts),
        ...downloadFindings(ctx, where, facts),
        ...nativeExitFindings(ctx, where, facts),
        ...outputFindings(ctx, where, facts),
        ...kubeletConfigFindings(where, facts),
      );
    }
    out.push(...verificationFindings(ctx), ...exitFindings(component));
    out.push(
      ...secretFindings(component),
      ...uninstallFindings(component),
      ...variableFindings(component, content.common),
    );
  }
  // install and post_upgrade often run the same script: report each finding once.
  const unique = [...new Map(out.map((f) => [`${f.check}\0${f.where}\0${f.message}`, f])).values()];
  return unique.sort(
    (a, b) => CHECKS.indexOf(a.check) - CHECKS.indexOf(b.check) || (a.where < b.where ? -1 : a.where > b.where ? 1 : 0),
  );
}
