/**
 * Which template a host applies: the one a pool names (its newest version
 * unless a version is pinned), or — when a pool names none — the newest
 * template whose `os` lists the host's Windows build. Pure, so the agent's
 * `apply` and `serve` and the operator's tools decide the same way.
 */
import { AgentError, AgentErrorCode } from "../common/errors";
import type { Template } from "./schema";

/** What a host asks for. */
export interface TemplateQuery {
  /** A template name; without it the host's build decides. */
  readonly name?: string;
  /** A version of the named template; without it the newest. */
  readonly version?: string;
  /** The host's Windows build number (17763, 20348, 26100…), when known. */
  readonly build?: number;
}

/** The fields selection reads, so callers can pass parsed templates or lighter records. */
export type SelectableTemplate = Pick<Template, "name" | "version" | "os">;

interface ParsedVersion {
  readonly core: readonly string[];
  readonly pre: readonly string[];
  readonly build: readonly string[];
}

function parseVersion(v: string): ParsedVersion {
  const trimmed = v.trim().replace(/^v(?=\d)/i, "");
  const plus = trimmed.indexOf("+");
  const main = plus >= 0 ? trimmed.slice(0, plus) : trimmed;
  const build = plus >= 0 ? trimmed.slice(plus + 1).split(".") : [];
  const dash = main.indexOf("-");
  const core = (dash >= 0 ? main.slice(0, dash) : main).split(/[._]/);
  const pre = dash >= 0 ? main.slice(dash + 1).split(".") : [];
  return { core, pre, build };
}

const NUMERIC = /^\d+$/;

// One identifier against another: numbers numerically, numbers before words, words by code point.
function compareIdentifiers(a: string, b: string): number {
  const an = NUMERIC.test(a);
  const bn = NUMERIC.test(b);
  if (an && bn) {
    // BigInt keeps 20-digit date stamps exact.
    const d = BigInt(a) - BigInt(b);
    return d === 0n ? 0 : d < 0n ? -1 : 1;
  }
  if (an !== bn) return an ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareLists(a: readonly string[], b: readonly string[], missing: "zero" | "shorter-first"): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined) {
      if (missing === "shorter-first") return x === undefined ? -1 : 1;
      const c = compareIdentifiers(x ?? "0", y ?? "0");
      if (c !== 0) return c;
      continue;
    }
    const c = compareIdentifiers(x, y);
    if (c !== 0) return c;
  }
  return 0;
}

/**
 * Orders versions the way people read them, Semantic Versioning's precedence
 * extended to the versions content uses:
 * - a leading `v` is ignored (`v1.2.0` = `1.2.0`);
 * - dot-separated parts compare numerically when both are numbers (`1.10` > `1.9`),
 *   numbers sort before words, missing trailing parts count as 0 (`1.2` = `1.2.0`);
 * - a pre-release (`-rc.1`) sorts before its release (`1.0.0-rc.1` < `1.0.0`);
 * - build metadata (`+rke2r2`) only breaks ties (`+rke2r1` < `+rke2r2`).
 * Returns a negative number, zero or a positive number, like a sort comparator.
 */
export function compareVersions(a: string, b: string): number {
  const pa = parseVersion(a);
  const pb = parseVersion(b);
  const core = compareLists(pa.core, pb.core, "zero");
  if (core !== 0) return core;
  if (pa.pre.length === 0 || pb.pre.length === 0) {
    if (pa.pre.length !== pb.pre.length) return pa.pre.length === 0 ? 1 : -1;
  } else {
    const pre = compareLists(pa.pre, pb.pre, "shorter-first");
    if (pre !== 0) return pre;
  }
  if (pa.build.length === 0 || pb.build.length === 0) return pa.build.length - pb.build.length;
  return compareLists(pa.build, pb.build, "shorter-first");
}

const newestFirst = (x: SelectableTemplate, y: SelectableTemplate): number => compareVersions(y.version, x.version);

function coverage(templates: readonly SelectableTemplate[]): string {
  if (templates.length === 0) return "there are no templates";
  const byName = new Map<string, Set<number>>();
  for (const t of templates) {
    const builds = byName.get(t.name) ?? new Set<number>();
    for (const b of t.os ?? []) builds.add(b);
    byName.set(t.name, builds);
  }
  const parts = [...byName.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, builds]) => `${name} (${builds.size > 0 ? [...builds].sort((x, y) => x - y).join(", ") : "no os list: only by name"})`);
  return `the templates cover: ${parts.join("; ")}`;
}

/**
 * Picks the template a host applies.
 *
 * - With `name`: that template, at `version` or else its newest version. When
 *   the template lists `os` and the host's `build` is known and not listed, it
 *   is refused: a template says which builds it fits.
 * - Without `name`: the newest template (by {@link compareVersions}) whose `os`
 *   lists `build`; templates without `os` are only ever chosen by name. Two
 *   different templates at the same newest version are ambiguous and refused.
 *
 * Throws an {@link AgentError} (NOT_FOUND, or INVALID_INPUT when nothing can
 * decide) whose message names what is available.
 */
export function selectTemplate<T extends SelectableTemplate>(templates: readonly T[], query: TemplateQuery): T {
  if (query.name !== undefined) {
    const named = templates.filter((t) => t.name === query.name).sort(newestFirst);
    if (named.length === 0) {
      const names = [...new Set(templates.map((t) => t.name))].sort();
      throw new AgentError(AgentErrorCode.NotFound, `no template named "${query.name}"; available: ${names.join(", ") || "none"}`);
    }
    const chosen = query.version === undefined ? named[0] : named.find((t) => t.version === query.version);
    if (chosen === undefined) {
      throw new AgentError(AgentErrorCode.NotFound, `template ${query.name} has no version ${query.version ?? ""}; available: ${named.map((t) => t.version).join(", ")}`);
    }
    if (query.build !== undefined && chosen.os !== undefined && !chosen.os.includes(query.build)) {
      throw new AgentError(
        AgentErrorCode.NotFound,
        `template ${chosen.name} ${chosen.version} is for Windows builds ${chosen.os.join(", ")}, not this host's ${query.build}; ${coverage(templates)}`,
      );
    }
    return chosen;
  }
  if (query.build === undefined) {
    throw new AgentError(AgentErrorCode.InvalidInput, `no template named and no Windows build to choose one by: name a template; ${coverage(templates)}`);
  }
  const build = query.build;
  const fits = templates.filter((t) => t.os?.includes(build) ?? false).sort(newestFirst);
  const best = fits[0];
  if (best === undefined) throw new AgentError(AgentErrorCode.NotFound, `no template lists Windows build ${build} in its os; ${coverage(templates)}`);
  const tied = fits.filter((t) => compareVersions(t.version, best.version) === 0 && t.name !== best.name);
  if (tied.length > 0) {
    const names = [best, ...tied].map((t) => `${t.name} ${t.version}`).join(", ");
    throw new AgentError(AgentErrorCode.NotFound, `several templates fit Windows build ${build} at the same newest version (${names}): name one`);
  }
  return best;
}
