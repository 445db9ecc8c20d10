/**
 * `winfleet preflight`: what would make a stack's first `pulumi up` (or its
 * destroy) fail late, found before it runs, each problem with its fix. Checks
 * come in three kinds, by what they need: the stack file alone (run always,
 * offline), the cluster (`--cluster`: the API server the stack's kube context
 * reaches) and Azure (`--azure`: Azure Resource Manager and Key Vault, as the
 * signed-in `az` identity, which is the one Pulumi deploys as). A check that
 * was not asked for is listed as not run, saying what it needs.
 */

/** What a check needs to run. */
export type Needs = "stack" | "cluster" | "azure";

/** One thing a check found: a problem fails the preflight, a warning does not. */
export interface Finding {
  readonly level: "problem" | "warning";
  readonly message: string;
  /** What to do about it. */
  readonly fix: string;
}

/** One check and what it found (nothing: it passed). */
export interface Check {
  readonly name: string;
  readonly needs: Needs;
  /** What it looked at, in a few words. */
  readonly about: string;
  readonly findings: readonly Finding[];
  /** Set when the check did not run, saying why. */
  readonly notRun?: string;
}

/** A finding, shorter to write. */
export const problem = (message: string, fix: string): Finding => ({ level: "problem", message, fix });
/** A warning, shorter to write. */
export const warning = (message: string, fix: string): Finding => ({ level: "warning", message, fix });

/** The checks that need what was not asked for, listed so the report says they exist. */
export function notRun(needs: Exclude<Needs, "stack">, checks: readonly { name: string; about: string }[]): Check[] {
  const why =
    needs === "cluster"
      ? "needs the cluster: run with --cluster"
      : "needs Azure: run with --azure, signed in with `az login` as the identity that deploys";
  return checks.map((c) => ({ ...c, needs, findings: [], notRun: why }));
}

/** The report as text: each check, its findings with their fixes, and a summary line. */
export function formatReport(stack: string, checks: readonly Check[]): string {
  const lines = [`preflight of stack ${stack}`];
  for (const c of checks) {
    if (c.notRun) {
      lines.push(`  not run  ${c.name}: ${c.about} (${c.notRun})`);
      continue;
    }
    if (c.findings.length === 0) {
      lines.push(`  ok       ${c.name}: ${c.about}`);
      continue;
    }
    for (const f of c.findings) {
      lines.push(`  ${f.level.padEnd(8)} ${c.name}: ${f.message}`);
      lines.push(`           fix: ${f.fix}`);
    }
  }
  const count = (level: Finding["level"]): number =>
    checks.reduce((n, c) => n + c.findings.filter((f) => f.level === level).length, 0);
  const skipped = checks.filter((c) => c.notRun).length;
  const n = (k: number, what: string): string => `${k} ${what}${k === 1 ? "" : "s"}`;
  lines.push(
    `${n(count("problem"), "problem")}, ${n(count("warning"), "warning")}${skipped > 0 ? `; ${n(skipped, "check")} not run` : ""}`,
  );
  return `${lines.join("\n")}\n`;
}

/** 1 when any check found a problem, else 0. */
export function exitCodeOf(checks: readonly Check[]): number {
  return checks.some((c) => c.findings.some((f) => f.level === "problem")) ? 1 : 0;
}
