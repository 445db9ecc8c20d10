/**
 * Carrying out one step: a command through the component's shell (its output
 * masked, logged under `<root>/.winfleet/logs/<run>/`, its tail kept), a
 * component's files through the Ignition engine, or their removal. Every
 * outcome becomes a {@link StepRun}; nothing here throws for a failed step.
 */
import { errorMessage, writeFileIn } from "../common";
import type { ShellKind } from "../content";
import type { FetchOptions, PathMapper } from "../ignition";
import type { Shell } from "../shell";
import { type HostFacts, type RunValues, stepEnvironment } from "./environment";
import { applyComponentFiles, ownedPath, removeComponentFiles } from "./files";
import { stateOf } from "./journal";
import {
  type CommandStep,
  type DesiredComponent,
  type InstalledComponent,
  REBOOT_EXIT,
  type Step,
  describeStep,
} from "./model";
import { recorded } from "./store";

/**
 * The same request as a shell can report it: POSIX exit statuses are 8 bits,
 * so 3010 arrives as 194 (3010 mod 256) from sh, as the agent's own does.
 */
export function rebootExitFor(shell: ShellKind): number {
  return shell === "sh" ? REBOOT_EXIT % 256 : REBOOT_EXIT;
}
const TAIL = { stdout: 512, stderr: 2048, log: 64 * 1024 } as const;

/** What running a step gave. */
export interface StepRun {
  readonly ok: boolean;
  /** The command, or what the step did (`files`, `remove files`). */
  readonly command: string;
  readonly exitCode: number | null;
  readonly timedOut: boolean;
  readonly stdoutTail: string;
  readonly stderrTail: string;
  /** The command exited {@link REBOOT_EXIT}. */
  readonly rebootAsked: boolean;
}

/** What a step needs from the run around it. */
export interface StepContext {
  readonly root: string;
  readonly mapper: PathMapper;
  readonly facts: HostFacts;
  readonly values: RunValues;
  readonly runId: string;
  readonly contentDir: string | null;
  readonly fetch: Omit<FetchOptions, "bundleRoot">;
  readonly installed: readonly InstalledComponent[];
  readonly desired: ReadonlyMap<string, DesiredComponent>;
  readonly shell: (kind: ShellKind) => Shell;
  readonly mask: (text: string) => string;
}

/** Runs step `index`. */
export async function runStep(step: Step, index: number, ctx: StepContext): Promise<StepRun> {
  const others = (name: string): Set<string> =>
    new Set(
      ctx.installed.filter((c) => c.name !== name).flatMap((c) => [...c.paths, ...c.metadata.files.map(ownedPath)]),
    );
  try {
    switch (step.kind) {
      case "command":
        return await runCommand(step, index, ctx);
      case "files": {
        const next = await recorded(ctx.root, step.component, step.version);
        const previous = step.from !== undefined ? await recorded(ctx.root, step.component, step.from) : undefined;
        const fetch = { ...ctx.fetch, ...(ctx.contentDir ? { bundleRoot: ctx.contentDir } : {}) };
        const r = await applyComponentFiles(ctx.root, ctx.mapper, next, previous, others(step.component), fetch);
        return done("files", `${r.changed} changed`);
      }
      case "remove-files":
        await removeComponentFiles(
          ctx.root,
          ctx.mapper,
          await recorded(ctx.root, step.component, step.version),
          others(step.component),
        );
        return done("remove files", "");
      case "reboot":
        return done("reboot", "");
    }
  } catch (e) {
    return {
      ok: false,
      command: step.kind === "command" ? step.command : describeStep(step),
      exitCode: null,
      timedOut: false,
      stdoutTail: "",
      stderrTail: ctx.mask(errorMessage(e)),
      rebootAsked: false,
    };
  }
}

async function runCommand(step: CommandStep, index: number, ctx: StepContext): Promise<StepRun> {
  const wanted = ctx.desired.get(step.component);
  const metadata =
    wanted?.version === step.version
      ? wanted.metadata
      : (await recorded(ctx.root, step.component, step.version)).metadata;
  const env = stepEnvironment(step, metadata, ctx.values, ctx.facts);
  const envelope = await ctx
    .shell(step.shell)
    .run({ command: step.command, env, timeoutMs: step.timeoutSeconds * 1000, isolated: step.isolated, cwd: ctx.root });
  const stdout = ctx.mask(envelope.stdout.toString("utf8"));
  const records = envelope.errorRecords.map(ctx.mask);
  const timeoutNote = envelope.timedOut
    ? `\nwinfleet: timed out after ${step.timeoutSeconds} s; the command and everything it started were killed\n`
    : "";
  const stderr = ctx.mask(envelope.stderr.toString("utf8")) + timeoutNote;
  await writeLog(ctx, index, step, envelope.exitCode, stdout, stderr, records);
  const reboot = rebootExitFor(step.shell);
  const exitOk = envelope.exitCode === 0 || envelope.exitCode === reboot;
  const errors = records.length > 0 && stderr.trim() === "" ? records.join("\n") : stderr;
  return {
    ok: exitOk && !envelope.timedOut,
    command: step.command,
    exitCode: envelope.exitCode,
    timedOut: envelope.timedOut,
    stdoutTail: tail(stdout, TAIL.stdout),
    stderrTail: tail(errors, TAIL.stderr),
    rebootAsked: envelope.exitCode === reboot,
  };
}

async function writeLog(
  ctx: StepContext,
  index: number,
  step: CommandStep,
  exitCode: number | null,
  stdout: string,
  stderr: string,
  records: readonly string[],
): Promise<void> {
  const dir = stateOf(ctx.root).sub("logs", ctx.runId);
  const text = [
    `# step ${index + 1}: ${step.component} ${step.version} ${step.phase} ${step.section}.${step.role}[${step.index}]`,
    `# exit ${String(exitCode)}`,
    "## stdout",
    tail(stdout, TAIL.log),
    "## stderr",
    tail(stderr, TAIL.log),
    ...(records.length > 0 ? ["## error records", ...records] : []),
    "",
  ].join("\n");
  await writeFileIn(dir, `${String(index + 1).padStart(3, "0")}-${step.component}.log`, text, {
    mode: 0o600,
    durable: false,
  });
}

function done(command: string, stdout: string): StepRun {
  return { ok: true, command, exitCode: 0, timedOut: false, stdoutTail: stdout, stderrTail: "", rebootAsked: false };
}

/** The end of `text`, at most `limit` characters. */
export function tail(text: string, limit: number): string {
  return text.length > limit ? `…${text.slice(text.length - limit)}` : text;
}
