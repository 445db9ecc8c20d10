/**
 * Cloud drift: has anything deployed changed behind Pulumi's back, or does the
 * stack in Git no longer match what is deployed? Two questions, asked in order
 * with the Automation API: a refresh preview (the cloud against Pulumi's state),
 * then a preview (the program against that state). Either finding changes is
 * drift; `--remediate` runs `up` to bring the stack back to what Git says.
 * The decision is a pure function of what the operations report, so it is
 * tested with the operations injected; {@link automationOps} is the real thing.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
// Types only: the Automation API itself is loaded when a real check runs.
import type { automation } from "@pulumi/pulumi";

/** How many resources an operation would create, update, delete, replace… keyed by Pulumi's op names. */
export type Changes = Readonly<Record<string, number>>;

/** The stack operations drift detection needs. */
export interface StackOps {
  /** `pulumi refresh --preview-only`: what the cloud has that the state does not. */
  refreshPreview(): Promise<Changes>;
  /** `pulumi preview`: what `up` would change. */
  preview(): Promise<Changes>;
  /** `pulumi up` with a refresh first, so that what changed behind Pulumi's back is corrected too. */
  up(): Promise<Changes>;
  /** What differs, a line per resource (`update  urn…  [spec, metadata]`), gathered by the operations run so far. */
  differences?(): readonly string[];
}

/** Exit codes of `npm run drift`. */
export const DRIFT_EXIT = { clean: 0, drift: 1, usage: 2, remediated: 0, failed: 3, noCli: 4 } as const;

/** What a drift check found and did. */
export interface DriftReport {
  readonly refresh: Changes;
  readonly preview: Changes;
  readonly drifted: boolean;
  readonly remediated?: Changes;
  readonly exitCode: number;
  /** A summary for a terminal or an issue body. */
  readonly summary: string;
}

/** The counts that are changes (everything but `same`), sorted. */
export function changed(c: Changes): [string, number][] {
  return Object.entries(c)
    .filter(([op, n]) => op !== "same" && n > 0)
    .sort(([a], [b]) => (a < b ? -1 : 1));
}

const describe = (c: Changes): string =>
  changed(c)
    .map(([op, n]) => `${n} to ${op}`)
    .join(", ") || "no changes";

/** Checks `stack` for drift and, with `remediate`, corrects it. */
export async function checkDrift(
  stack: string,
  ops: StackOps,
  options: { remediate: boolean; log?: (line: string) => void },
): Promise<DriftReport> {
  const log = options.log ?? (() => undefined);
  log(`refresh preview of ${stack}…`);
  const refresh = await ops.refreshPreview();
  log(`preview of ${stack}…`);
  const preview = await ops.preview();
  const drifted = changed(refresh).length > 0 || changed(preview).length > 0;
  const lines = [
    `stack ${stack}:`,
    `  cloud vs state (refresh): ${describe(refresh)}`,
    `  Git vs state (preview):   ${describe(preview)}`,
    ...(ops.differences?.() ?? []).map((d) => `    ${d}`),
  ];
  if (!drifted)
    return { refresh, preview, drifted, exitCode: DRIFT_EXIT.clean, summary: [...lines, "no drift"].join("\n") };
  if (!options.remediate)
    return {
      refresh,
      preview,
      drifted,
      exitCode: DRIFT_EXIT.drift,
      summary: [...lines, "DRIFT: run with --remediate (pulumi up) to correct it"].join("\n"),
    };
  log(`up of ${stack}…`);
  const remediated = await ops.up();
  return {
    refresh,
    preview,
    drifted,
    remediated,
    exitCode: DRIFT_EXIT.remediated,
    summary: [...lines, `DRIFT corrected by pulumi up: ${describe(remediated)}`].join("\n"),
  };
}

/** Whether the Pulumi CLI runs here. */
export function pulumiCliAvailable(env: NodeJS.ProcessEnv = process.env): boolean {
  const r = spawnSync("pulumi", ["version"], { env, stdio: "ignore" });
  return r.error === undefined && r.status === 0;
}

/** The stack operations through the Automation API on the project at `workDir`. */
export async function automationOps(stackName: string, workDir: string): Promise<StackOps> {
  // Loaded here: the Automation API is only needed when a real check runs.
  const { LocalWorkspace } = (await import("@pulumi/pulumi")).automation;
  const stack = await LocalWorkspace.selectStack({ stackName, workDir });
  const differences: string[] = [];
  // Each resource a preview would touch, named by its type and name rather than its whole URN.
  const onEvent = (kind: string) => (event: automation.EngineEvent) => {
    // A preview says what it would do as each step starts; a refresh says what it found as each
    // resource's read completes (its start is a "refresh" of everything).
    const m = event.resourcePreEvent?.metadata ?? event.resOutputsEvent?.metadata;
    if (!m || ["same", "read", "refresh"].includes(m.op)) return;
    // urn:pulumi:<stack>::<project>::<parent types $-joined>$<type>::<name>
    const [, , types = "", name = ""] = m.urn.split("::");
    const type = types.split("$").pop() ?? types;
    const keys = m.diffs?.length ? `  [${m.diffs.join(", ")}]` : "";
    const line = `${kind}: ${m.op} ${type} ${name}${keys}`;
    if (!differences.includes(line)) differences.push(line);
  };
  // Counts rather than --expect-no-changes: the CLI would fail the same way on drift and on any
  // other error, and the counts are what the summary reports. A refresh preview's counts come
  // from its own event log; the stack's history holds only real updates.
  return {
    refreshPreview: async () => ({ ...(await stack.previewRefresh({ onEvent: onEvent("refresh") })).changeSummary }),
    preview: async () => ({ ...(await stack.preview({ onEvent: onEvent("preview") })).changeSummary }),
    // The same policy pack a deploy runs: remediation must not land what a deploy would refuse.
    up: async () => ({
      ...((await stack.up({ refresh: true, policyPacks: [join(workDir, "policy")] })).summary.resourceChanges ?? {}),
    }),
    differences: () => differences,
  };
}
