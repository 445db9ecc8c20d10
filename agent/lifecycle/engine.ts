/**
 * The lifecycle engine's operations, as the CLI and `serve` call them: plan,
 * apply, uninstall and repair. Each takes the root's lock, finishes or
 * supersedes an earlier unfinished run, plans from what the host recorded,
 * checks every required variable, records the components it will lay down,
 * journals the plan and hands it to the executor. Nothing is written before the
 * content, the template and the variables are known to be good.
 */
import { randomBytes } from "node:crypto";
import { AgentError, AgentErrorCode } from "../common";
import { type Catalog, loadCatalog } from "../content";
import { declaredSecretNames, missingVariables, splitDeclaredSecrets } from "./environment";
import { endDrain } from "./drain";
import { type ExecutorDeps, type RunOutcome, executeRun } from "./executor";
import { type Journal, type Run, readJournal, remember, writeJournal } from "./journal";
import { type ProcessProbe, acquireLock } from "./lock";
import type { InstalledComponent, Plan } from "./model";
import { planLifecycle } from "./planner";
import type { ServiceProbe } from "./services";
import { installedComponents, record } from "./store";
import { type Target, pickTemplate, resolveTarget, windowsBuild } from "./target";

/** What to apply. */
export interface ApplyRequest {
  /** Content directory (bundle, source tree or loose files). */
  readonly content: string;
  readonly template?: string;
  readonly templateVersion?: string;
  /** Accept and report the 2019 format's defects. @default false */
  readonly lenient?: boolean;
}

/** The engine's dependencies: the executor's plus the values and the lock's probe. */
export interface EngineDeps extends ExecutorDeps {
  /** Agent-config variables (override the template's). */
  readonly variables: Readonly<Record<string, string>>;
  readonly probe: ProcessProbe;
  /** Who takes the lock, for the message another agent sees. */
  readonly command: string;
  /**
   * Verifies a content bundle before it is read (signatures); throws to refuse
   * it. Returns the SHA-256 of each file as signed: the content is read against
   * them, so a bundle changed after the check is refused, not applied.
   */
  readonly verifyContent?: (dir: string) => Promise<Readonly<Record<string, string>>>;
  /** The host's services, for `serve`'s re-verify of the node services (Windows only). */
  readonly services?: ServiceProbe;
}

/** What `plan` shows. */
export interface PlanPreview {
  readonly target: Target;
  readonly contentDigest: string;
  readonly installed: readonly InstalledComponent[];
  readonly plan: Plan;
  /** An unfinished earlier run, and whether `apply` resumes it or plans afresh. */
  readonly unfinished?: { readonly run: Run; readonly resumes: boolean };
  /** Required variables without a value (apply would refuse). */
  readonly missing: readonly string[];
}

/** Reads the content and plans, changing nothing. */
export async function previewApply(
  req: ApplyRequest,
  deps: Pick<EngineDeps, "root" | "variables" | "secrets" | "verifyContent">,
): Promise<PlanPreview> {
  const journal = await readJournal(deps.root);
  const { catalog, target } = await loadTarget(req, deps);
  const installed = await installedComponents(deps.root, journal);
  const plan = planLifecycle(installed, target.components);
  const run = journal.run;
  const unfinished = run ? { run, resumes: sameRun(run, "apply", target, catalog.digest) } : undefined;
  const missing = missingVariables(planComponents(plan, target, installed), {
    variables: { ...target.template.variables, ...deps.variables },
    secrets: deps.secrets,
  });
  return { target, contentDigest: catalog.digest, installed, plan, ...(unfinished ? { unfinished } : {}), missing };
}

/** Converges the host to the template. */
export async function apply(req: ApplyRequest, deps: EngineDeps): Promise<RunOutcome> {
  const lock = await acquireLock(deps.root, deps.command, deps.probe);
  try {
    let journal = await readJournal(deps.root);
    const { catalog, target } = await loadTarget(req, deps);
    if (journal.run) {
      const earlier = await settleEarlierRun(journal, deps, sameRun(journal.run, "apply", target, catalog.digest));
      if (earlier.outcome) return earlier.outcome;
      journal = earlier.journal;
    }
    const installed = await installedComponents(deps.root, journal);
    const plan = planLifecycle(installed, target.components);
    const given = { ...target.template.variables, ...deps.variables };
    const names = declaredSecretNames([
      ...target.components.map((d) => d.metadata),
      ...installed.map((c) => c.metadata),
    ]);
    const { variables } = splitDeclaredSecrets(given, names);
    refuseMissing(
      missingVariables(planComponents(plan, target, installed), { variables: given, secrets: deps.secrets }),
    );
    const at = (deps.now ?? (() => new Date()))().toISOString();
    const ref = { name: target.template.name, version: target.template.version };
    if (plan.steps.length === 0) {
      const already =
        journal.applied?.template.name === ref.name &&
        journal.applied.template.version === ref.version &&
        journal.applied.contentDigest === catalog.digest;
      if (!already) {
        journal = remember(
          {
            ...journal,
            applied: { template: ref, contentDigest: catalog.digest, variables, at },
            uninstalledAt: undefined,
          },
          "converged",
          `${ref.name} ${ref.version} (nothing to change)`,
          at,
        );
        await writeJournal(deps.root, journal);
      }
      // A drain left by an earlier run (superseded, or ended by a crash before its uncordon) ends here.
      journal = await endDrain(journal, deps);
      deps.observer.event({ type: "apply-converged", at, template: ref, changed: false });
      return { kind: "converged", journal, changed: false };
    }
    for (const d of target.components) {
      const c = catalog.components.get(`${d.name}_${d.version}`);
      if (c && plan.steps.some((s) => s.component === d.name && s.version === d.version)) await record(deps.root, c);
    }
    const run: Run = {
      id: runId(at),
      kind: "apply",
      target: ref,
      contentDir: catalog.dir,
      contentDigest: catalog.digest,
      variables,
      startedAt: at,
      order: target.components.map((d) => d.name),
      steps: [...plan.steps],
      next: 0,
      status: "running",
      rebootRequests: [],
      results: [],
    };
    journal = remember(
      { ...journal, run },
      "apply-planned",
      `${ref.name} ${ref.version}: ${plan.steps.length} steps`,
      at,
    );
    await writeJournal(deps.root, journal);
    return await executeRun(journal, { ...deps, variables: given });
  } finally {
    await lock.release();
  }
}

/** Runs the uninstall phase for every installed component, then removes their files. */
export async function uninstall(deps: EngineDeps): Promise<RunOutcome> {
  const lock = await acquireLock(deps.root, deps.command, deps.probe);
  try {
    let journal = await readJournal(deps.root);
    if (journal.run) {
      const earlier = await settleEarlierRun(journal, deps, journal.run.kind === "uninstall");
      if (earlier.outcome) return earlier.outcome;
      journal = earlier.journal;
    }
    const installed = await installedComponents(deps.root, journal);
    const plan = planLifecycle(installed, []);
    const given = { ...(journal.applied?.variables ?? {}), ...deps.variables };
    const { variables } = splitDeclaredSecrets(given, declaredSecretNames(installed.map((c) => c.metadata)));
    const at = (deps.now ?? (() => new Date()))().toISOString();
    const run: Run = {
      id: runId(at),
      kind: "uninstall",
      target: null,
      contentDir: null,
      contentDigest: null,
      variables,
      startedAt: at,
      order: [],
      steps: [...plan.steps],
      next: 0,
      status: "running",
      rebootRequests: [],
      results: [],
    };
    journal = remember(
      { ...journal, run },
      "uninstall-planned",
      `${plan.steps.length} steps for ${installed.length} components`,
      at,
    );
    await writeJournal(deps.root, journal);
    return await executeRun(journal, { ...deps, variables: given });
  } finally {
    await lock.release();
  }
}

/** Lays the named components' files down again (drift correction), as a journaled run. */
export async function repair(components: readonly string[], deps: EngineDeps): Promise<RunOutcome | undefined> {
  const lock = await acquireLock(deps.root, deps.command, deps.probe);
  try {
    let journal = await readJournal(deps.root);
    if (journal.run || !journal.applied) return undefined; // a run of its own is in progress, or nothing was applied
    const installed = await installedComponents(deps.root, journal);
    const steps = installed
      .filter((c) => components.includes(c.name) && c.pending === undefined)
      .map((c) => ({
        kind: "files" as const,
        phase: "files" as const,
        component: c.name,
        version: c.version,
        priority: 0,
        next: "install" as const,
        finalizes: "installed" as const,
      }));
    if (steps.length === 0) return undefined;
    const at = (deps.now ?? (() => new Date()))().toISOString();
    const run: Run = {
      id: runId(at),
      kind: "repair",
      target: journal.applied.template,
      contentDir: null,
      contentDigest: journal.applied.contentDigest,
      variables: journal.applied.variables,
      startedAt: at,
      order: installed.map((c) => c.name),
      steps,
      next: 0,
      status: "running",
      rebootRequests: [],
      results: [],
    };
    journal = remember({ ...journal, run }, "repair-planned", components.join(", "), at);
    await writeJournal(deps.root, journal);
    return await executeRun(journal, deps);
  } finally {
    await lock.release();
  }
}

async function loadTarget(
  req: ApplyRequest,
  deps: Pick<EngineDeps, "verifyContent">,
): Promise<{ catalog: Catalog; target: Target }> {
  const signed = await deps.verifyContent?.(req.content);
  const catalog = await loadCatalog(req.content, { lenient: req.lenient, ...(signed ? { signed } : {}) });
  const template = pickTemplate(catalog, { name: req.template, version: req.templateVersion, build: windowsBuild() });
  return { catalog, target: resolveTarget(catalog, template) };
}

function sameRun(run: Run, kind: Run["kind"], target: Target, digest: string): boolean {
  return (
    run.kind === kind &&
    run.target?.name === target.template.name &&
    run.target.version === target.template.version &&
    run.contentDigest === digest
  );
}

/**
 * An earlier run that did not finish: resumed when it is the one asked for;
 * otherwise superseded (the planner continues from what the host recorded),
 * once a reboot it asked for has happened.
 */
async function settleEarlierRun(
  journal: Journal,
  deps: EngineDeps,
  resume: boolean,
): Promise<{ journal: Journal; outcome?: RunOutcome }> {
  const run = journal.run as Run;
  if (resume) return { journal, outcome: await executeRun(journal, deps) };
  const at = (deps.now ?? (() => new Date()))().toISOString();
  if (run.status === "reboot-pending" && run.reboot && !(await deps.reboot.completed(run.reboot))) {
    return { journal, outcome: await executeRun(journal, deps) }; // asks for the reboot again
  }
  const what = run.target ? `${run.kind} of ${run.target.name} ${run.target.version}` : run.kind;
  const next = remember(
    { ...journal, run: undefined },
    "superseded",
    `${what} stopped at step ${run.next + 1} of ${run.steps.length} (${run.status}); planning afresh`,
    at,
  );
  await writeJournal(deps.root, next);
  return { journal: next };
}

function planComponents(
  plan: Plan,
  target: Target,
  installed: readonly InstalledComponent[],
): InstalledComponent["metadata"][] {
  const out: InstalledComponent["metadata"][] = [];
  for (const s of plan.steps) {
    if (s.kind !== "command") continue;
    const m =
      target.components.find((d) => d.name === s.component && d.version === s.version)?.metadata ??
      installed.find((c) => c.name === s.component && c.version === s.version)?.metadata;
    if (m && !out.includes(m)) out.push(m);
  }
  return out;
}

function refuseMissing(missing: readonly string[]): void {
  if (missing.length === 0) return;
  throw new AgentError(
    AgentErrorCode.InvalidInput,
    `required variables have no value (set them in the template's variables, or the agent config's variables or secrets); nothing was changed:\n  ${missing.join("\n  ")}`,
  );
}

function runId(at: string): string {
  return `${at.replace(/[-:.]/g, "").slice(0, 15)}-${randomBytes(3).toString("hex")}`;
}
