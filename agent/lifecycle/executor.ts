/**
 * The executor: runs a journaled plan step by step. Before a step starts the
 * journal says so; only after it succeeded is it recorded done, with its
 * result. A crash therefore re-runs the interrupted step and never a finished
 * one; a failure stops the run and keeps the component, phase, command, exit
 * code and the tail of its error output; a reboot is requested only after the
 * journal that says why is on disk. A command that exits 3010 asks for a
 * reboot at the end of its priority group, coalesced with the plan's own.
 */
import type { ShellKind } from "../content";
import type { FetchOptions, PathMapper } from "../ignition";
import type { Shell } from "../shell";
import { type DrainContext, type Drainer, drainNode, endDrain } from "./drain";
import type { LifecycleObserver } from "./events";
import {
  type HostFacts,
  type RunValues,
  declaredSecretNames,
  masker,
  secretValues,
  splitDeclaredSecrets,
} from "./environment";
import { type Journal, type Run, remember, writeJournal } from "./journal";
import {
  type DesiredComponent,
  type InstalledComponent,
  REBOOT_EXIT,
  type Step,
  describeStep,
  disruptionOf,
  groupOf,
} from "./model";
import { applyEffect } from "./planner";
import type { RebootExecutor } from "./reboot";
import { rebootExitFor, runStep } from "./step-runner";
import { installedComponents, pruneRecords, recorded } from "./store";

/** Everything the executor touches, passed in. */
export interface ExecutorDeps {
  readonly root: string;
  readonly mapper: PathMapper;
  readonly facts: HostFacts;
  /** Secrets for this run (never journaled). */
  readonly secrets: Readonly<Record<string, string>>;
  /**
   * Variables given to this invocation (agent config, `--var`): those a
   * component declares secret are not in the journaled run, so they come from here.
   */
  readonly variables?: Readonly<Record<string, string>>;
  readonly shell: (kind: ShellKind) => Shell;
  readonly reboot: RebootExecutor;
  readonly observer: LifecycleObserver;
  readonly fetch?: Omit<FetchOptions, "bundleRoot">;
  readonly now?: () => Date;
  /** Stop between steps (SIGTERM in `serve`). */
  readonly signal?: AbortSignal;
  /** Drains the node before the first disruptive step; without it nothing is drained (no cluster). */
  readonly drainer?: Drainer;
}

/** How a run ended. */
export type RunOutcome =
  | { readonly kind: "converged"; readonly journal: Journal; readonly changed: boolean }
  | { readonly kind: "failed"; readonly journal: Journal }
  | { readonly kind: "reboot"; readonly journal: Journal; readonly reasons: readonly string[] }
  | { readonly kind: "interrupted"; readonly journal: Journal };

/** Runs `start.run` from its next step to its end, a failure, a reboot or an interruption. */
export async function executeRun(start: Journal, deps: ExecutorDeps): Promise<RunOutcome> {
  if (!start.run) throw new Error("executeRun needs a run in the journal");
  const now = (): string => (deps.now ?? (() => new Date()))().toISOString();
  const emit = (e: Parameters<LifecycleObserver["event"]>[0]): void => deps.observer.event(e);
  let journal = start;
  let run: Run = start.run;
  let installed = await installedComponents(deps.root, journal);
  const desired = await desiredIndex(deps.root, run);
  const metadata = [...[...desired.values()].map((d) => d.metadata), ...installed.map((c) => c.metadata)];
  const names = declaredSecretNames(metadata);
  // A journal written before declared secrets were kept out of it may still hold some: out they go.
  const fromRun = splitDeclaredSecrets(run.variables, names);
  run = { ...run, variables: fromRun.variables };
  const values: RunValues = {
    variables: fromRun.variables,
    secrets: { ...fromRun.secrets, ...splitDeclaredSecrets(deps.variables ?? {}, names).secrets, ...deps.secrets },
  };
  const mask = masker(secretValues(metadata, values));

  const save = async (): Promise<void> => {
    journal = { ...journal, installed: toJournal(installed, journal, now()), run };
    await writeJournal(deps.root, journal);
  };
  const requestReboot = async (reasons: readonly string[], step: number, isStatic: boolean): Promise<RunOutcome> => {
    const at = now();
    const bootId = await deps.reboot.bootId();
    run = {
      ...run,
      status: "reboot-pending",
      current: undefined,
      reboot: { step, static: isStatic, reasons: [...reasons], requestedAt: at, ...(bootId ? { bootId } : {}) },
    };
    journal = remember(journal, "reboot-required", reasons.join("; "), at);
    await save(); // on disk before the machine is asked to go down
    emit({ type: "reboot-required", at, reasons });
    await deps.reboot.reboot(reasons);
    return { kind: "reboot", journal, reasons };
  };

  // Where the drain stands is in the journal, written with the run.
  const drainContext: DrainContext = {
    drainer: deps.drainer,
    record: () => journal.drain,
    save: async (record, event, detail) => {
      journal = remember({ ...journal, drain: record }, event, detail, now());
      await save();
    },
    emit,
    now,
    ...(deps.signal ? { signal: deps.signal } : {}),
  };
  // Before the first step that disrupts the node's pods (a reboot always does), and only then: the node drained.
  const drainBefore = async (i: number): Promise<RunOutcome | undefined> => {
    const state = journal.drain?.state;
    if (state === "drained" || state === "skipped") return undefined;
    const reasons = [...new Set(run.steps.slice(i).flatMap((s) => disruptionOf(s) ?? []))];
    const drained = await drainNode(drainContext, reasons.length > 0 ? reasons : ["a step asked for a reboot"]);
    if (drained.kind === "drained") return undefined;
    const at = now();
    if (drained.kind === "interrupted") {
      run = { ...run, status: "interrupted", current: undefined };
      journal = remember(journal, "interrupted", `stopped while draining, before step ${i + 1}`, at);
      await save();
      return { kind: "interrupted", journal };
    }
    const step = run.steps[Math.min(i, run.steps.length - 1)] as Step;
    const command = "drain the node (cordon, evict its pods)";
    run = {
      ...run,
      status: "failed",
      current: undefined,
      failure: {
        step: i,
        component: step.component,
        version: step.version,
        phase: step.phase,
        command,
        exitCode: null,
        timedOut: drained.timedOut,
        errorTail: drained.message,
        at,
      },
    };
    journal = remember(journal, "apply-failed", `before step ${i + 1}, ${command}: ${drained.message}`, at);
    await save();
    emit({
      type: "apply-failed",
      at,
      component: step.component,
      phase: step.phase,
      command,
      exitCode: null,
      errorTail: drained.message,
    });
    return { kind: "failed", journal };
  };

  if (run.status === "reboot-pending" && run.reboot) {
    const r = run.reboot;
    if (!(await deps.reboot.completed(r))) return requestReboot(r.reasons, r.step, r.static);
    // Every request pending when the reboot was asked for is satisfied by it.
    run = { ...run, next: r.static ? r.step + 1 : run.next, rebootRequests: [], reboot: undefined };
    journal = remember(journal, "reboot-done", `continuing at step ${run.next + 1} of ${run.steps.length}`, now());
    emit({ type: "reboot-done", at: now() });
  } else if (run.current) {
    journal = remember(
      journal,
      "step-interrupted",
      `step ${run.current.step + 1} (${describeStep(run.steps[run.current.step] as Step)}) did not finish; running it again`,
      now(),
    );
  }
  run = { ...run, status: "running", current: undefined, failure: undefined };
  await save();
  emit({
    type: "apply-started",
    at: now(),
    template: run.target ?? { name: "", version: "" },
    steps: run.steps.length,
    resumed: run.next > 0,
  });

  const shells = new Map<ShellKind, Shell>();
  const shellFor = (kind: ShellKind): Shell => {
    const s = shells.get(kind) ?? deps.shell(kind);
    shells.set(kind, s);
    return s;
  };
  let changed = run.next > 0;
  try {
    for (let i = run.next; i < run.steps.length; i++) {
      const step = run.steps[i] as Step;
      if (deps.signal?.aborted) {
        run = { ...run, status: "interrupted" };
        journal = remember(journal, "interrupted", `stopped before step ${i + 1} of ${run.steps.length}`, now());
        await save();
        return { kind: "interrupted", journal };
      }
      // A group that asked for a reboot (exit 3010) gets it before the next group starts.
      if (run.rebootRequests.some((r) => r.group !== groupOf(step)))
        return (
          (await drainBefore(i)) ??
          (await requestReboot(
            run.rebootRequests.map((r) => r.reason),
            i,
            false,
          ))
        );
      if (disruptionOf(step) !== undefined) {
        const stopped = await drainBefore(i);
        if (stopped) return stopped;
      }
      if (step.kind === "reboot")
        return await requestReboot([...step.reasons, ...run.rebootRequests.map((r) => r.reason)], i, true);

      installed = applyEffect(installed, step, "before", desired);
      run = { ...run, current: { step: i, startedAt: now() } };
      await save();
      const summary = {
        id: i,
        component: step.component,
        version: step.version,
        phase: step.phase,
        title: describeStep(step),
      };
      emit({ type: "step-started", at: now(), step: summary });
      const started = performance.now();
      const result = await runStep(step, i, {
        root: deps.root,
        mapper: deps.mapper,
        facts: deps.facts,
        values,
        runId: run.id,
        contentDir: run.contentDir,
        fetch: deps.fetch ?? {},
        installed,
        desired,
        shell: shellFor,
        mask,
      });
      const durationMs = Math.round(performance.now() - started);
      const at = now();
      changed = true;
      run = {
        ...run,
        results: [
          ...run.results,
          {
            step: i,
            exitCode: result.exitCode,
            durationMs,
            stdoutTail: result.stdoutTail,
            stderrTail: result.stderrTail,
            at,
          },
        ],
      };
      if (!result.ok) {
        const failure = {
          step: i,
          component: step.component,
          version: step.version,
          phase: step.phase,
          command: result.command,
          exitCode: result.exitCode,
          timedOut: result.timedOut,
          errorTail: result.stderrTail,
          at,
        };
        run = { ...run, status: "failed", current: undefined, failure };
        journal = remember(
          journal,
          "apply-failed",
          `${step.component} ${step.version} ${step.phase}: ${describeStep(step)} ${result.timedOut ? "timed out" : `exited ${String(result.exitCode)}`}`,
          at,
        );
        await save();
        emit({
          type: "apply-failed",
          at,
          component: step.component,
          phase: step.phase,
          command: result.command,
          exitCode: result.exitCode,
          errorTail: result.stderrTail,
        });
        return { kind: "failed", journal };
      }
      installed = applyEffect(installed, step, "after", desired);
      if (result.rebootAsked)
        run = {
          ...run,
          rebootRequests: [
            ...run.rebootRequests,
            {
              group: groupOf(step),
              reason: `${step.component} ${step.version} ${describeStep(step)} asked for a reboot (exit ${step.kind === "command" ? rebootExitFor(step.shell) : REBOOT_EXIT})`,
            },
          ],
        };
      run = { ...run, next: i + 1, current: undefined };
      if (step.finalizes)
        journal = remember(
          journal,
          `component-${step.finalizes}`,
          `${step.component} ${step.version}${step.from && step.from !== step.version ? ` (from ${step.from})` : ""}`,
          at,
        );
      await save();
      emit({ type: "step-finished", at, step: summary, durationMs });
      if (step.finalizes === "installed")
        emit({ type: "component-installed", at, component: step.component, version: step.version });
      else if (step.finalizes === "upgraded")
        emit({ type: "component-upgraded", at, component: step.component, from: step.from ?? "", to: step.version });
      else if (step.finalizes === "removed")
        emit({ type: "component-removed", at, component: step.component, version: step.version });
    }
    if (run.rebootRequests.length > 0)
      return (
        (await drainBefore(run.steps.length)) ??
        (await requestReboot(
          run.rebootRequests.map((r) => r.reason),
          run.steps.length,
          false,
        ))
      );
  } finally {
    for (const s of shells.values()) await s.close();
  }

  const at = now();
  const order = new Map(run.order.map((name, i) => [name, i]));
  installed = [...installed].sort((a, b) => (order.get(a.name) ?? order.size) - (order.get(b.name) ?? order.size));
  journal = { ...journal, installed: toJournal(installed, journal, at), run: undefined };
  if (run.kind === "uninstall") journal = { ...journal, applied: undefined, uninstalledAt: at };
  else if (run.target)
    journal = {
      ...journal,
      applied: { template: run.target, contentDigest: run.contentDigest, variables: run.variables, at },
      uninstalledAt: undefined,
    };
  journal = remember(
    journal,
    run.kind === "uninstall" ? "uninstalled" : run.kind === "repair" ? "repaired" : "converged",
    run.target ? `${run.target.name} ${run.target.version}` : "",
    at,
  );
  await writeJournal(deps.root, journal);
  await pruneRecords(deps.root, journal);
  // Converged, after any reboot: the node takes pods again (unless someone else had cordoned it).
  journal = await endDrain(journal, deps);
  if (run.target) emit({ type: "apply-converged", at, template: run.target, changed });
  return { kind: "converged", journal, changed };
}

function toJournal(installed: readonly InstalledComponent[], journal: Journal, at: string): Journal["installed"] {
  // Looked up by key: a search of the list per component made every save quadratic in the components.
  const since = new Map<string, string>();
  for (const x of journal.installed)
    if (!since.has(`${x.name}\0${x.version}`)) since.set(`${x.name}\0${x.version}`, x.since);
  return installed.map((c) => ({
    name: c.name,
    version: c.version,
    ...(c.pending ? { pending: c.pending } : {}),
    since: since.get(`${c.name}\0${c.version}`) ?? at,
  }));
}

/** The run's desired components, from the records made when it was planned. */
async function desiredIndex(root: string, run: Run): Promise<Map<string, DesiredComponent>> {
  const out = new Map<string, DesiredComponent>();
  for (const s of run.steps as readonly Step[]) {
    if (s.kind !== "files" || out.has(s.component)) continue;
    const r = await recorded(root, s.component, s.version);
    out.set(s.component, { name: r.name, version: r.version, metadata: r.metadata, paths: r.paths });
  }
  return out;
}
