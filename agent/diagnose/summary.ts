/**
 * `diagnose --summary`: one screen, what is wrong first — a failed step with
 * its error output's tail, drift, a pending reboot, orphaned host processes, a
 * report backlog, services not running, sources that could not be read —
 * then what is fine. Read back from the diagnosis, so it says exactly what
 * the archive holds.
 */
import type { DriftItem, StatusReport } from "../lifecycle";
import { PATHS } from "./agent-collectors";
import type { ProcessRow } from "./broker-collectors";
import type { Diagnosis } from "./diagnose";

/** A report backlog older than this is a problem; younger, reports are on their way. */
const BACKLOG_AGE_MS = 2 * 60_000;
const TAIL_LINES = 8;
const LIST_MAX = 5;

/** What the summary found. */
export interface Summary {
  /** Most important first; each entry is a headline and its detail lines. */
  readonly problems: readonly (readonly string[])[];
  readonly fine: readonly string[];
}

function read<T>(d: Diagnosis, path: string): T | undefined {
  const data = d.files.get(path);
  if (!data) return undefined;
  try {
    return JSON.parse(data.toString("utf8")) as T;
  } catch {
    return undefined;
  }
}

const more = (n: number): string[] => (n > LIST_MAX ? [`  … and ${n - LIST_MAX} more (see the archive)`] : []);

/** The same reboot asked for this many times in the recent history is a loop, not progress. */
const LOOP_COUNT = 3;

/**
 * A headline when the history shows the agent rebooting for the same reason, or re-running the same interrupted step,
 * again and again.
 */
function rebootLoop(history: StatusReport["history"]): string | undefined {
  const counts = new Map<string, number>();
  for (const h of history) {
    if (h.event !== "reboot-required" && h.event !== "step-interrupted") continue;
    const key = `${h.event}: ${h.detail}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const [worst, n] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? ["", 0];
  return n >= LOOP_COUNT
    ? `REBOOT LOOP: ${n} times in the recent history — ${worst}; winfleet-agent status shows the history`
    : undefined;
}

/** Derives the summary. */
export function summarize(d: Diagnosis, now = new Date()): Summary {
  const problems: string[][] = [];
  const fine: string[] = [];
  const status = read<StatusReport & { agentVersion: string }>(d, PATHS.status);
  if (status?.failure) {
    const f = status.failure;
    const tail = f.errorTail
      .trimEnd()
      .split("\n")
      .filter((l) => l.trim() !== "")
      .slice(-TAIL_LINES);
    problems.push([
      `FAILED: ${f.component} ${f.version} ${f.phase}: ${f.timedOut ? "timed out" : `exited ${String(f.exitCode)}`} — ${f.command}`,
      ...(tail.length > 0 ? ["  error output (last lines):", ...tail.map((l) => `    ${l}`)] : ["  (no error output)"]),
      "  full log: agent/runs/ in the archive; winfleet-agent status",
    ]);
  } else if (status) {
    const t = status.template ? `${status.template.name} ${status.template.version}` : "no template";
    const line = `agent ${status.agentVersion}: ${status.state}, ${t}, ${status.components.length} components`;
    if (status.state === "converged" || status.state === "idle" || status.state === "uninstalled") fine.push(line);
    else if (status.state !== "reboot-pending")
      problems.push([
        `NOT CONVERGED: ${line}${status.run?.step ? `; at step ${status.run.step.index + 1}: ${status.run.step.component} ${status.run.step.phase}` : ""}`,
      ]);
  }

  const verify = read<{ drift: boolean; checked: number; items: DriftItem[] }>(d, PATHS.verify);
  if (verify?.drift) {
    const components = [...new Set(verify.items.map((i) => i.component))].join(", ");
    problems.push([
      `DRIFT: ${verify.items.length} of ${verify.checked} applied paths differ (${components}); winfleet-agent verify`,
      ...verify.items.slice(0, LIST_MAX).map((i) => `  ${i.problem.padEnd(8)} ${i.path}`),
      ...more(verify.items.length),
    ]);
  } else if (verify) fine.push(`no drift: ${verify.checked} applied paths as applied`);

  const windowsReboot = read<{ pending: boolean; reasons: string[] }>(d, "windows/pending-reboot.json");
  const loop = rebootLoop(status?.history ?? []);
  if (loop) problems.push([loop]);
  if (status?.reboot)
    problems.push([`REBOOT PENDING since ${status.reboot.requestedAt}: ${status.reboot.reasons.join("; ")}`]);
  if (windowsReboot?.pending) problems.push([`WINDOWS REBOOT PENDING: ${windowsReboot.reasons.join(", ")}`]);
  if (status && !status.reboot && !windowsReboot?.pending) fine.push("no reboot pending");

  const procs = read<{ from: string; processes: ProcessRow[] }>(d, PATHS.processes);
  if (procs) {
    const orphans = procs.processes.filter((p) => p.state === "orphaned");
    if (orphans.length > 0) {
      problems.push([
        `ORPHANS: ${orphans.length} host process(es) left by a broker that died; winfleet-agent cli prc kill --orphans ends them`,
        ...orphans
          .slice(0, LIST_MAX)
          .map((p) => `  ${p.name} pid ${p.pid}, started ${p.startedAt || "?"} by broker pid ${p.brokerPid || "?"}`),
        ...more(orphans.length),
      ]);
    } else
      fine.push(
        `broker: ${procs.processes.filter((p) => p.state === "running").length} host processes running, no orphans${procs.from === "records" ? " (from its records: the broker did not answer)" : ""}`,
      );
  }

  const queue = read<{ queued: number; oldest?: string }>(d, PATHS.reportQueue);
  if (queue && queue.queued > 0 && queue.oldest && now.getTime() - Date.parse(queue.oldest) > BACKLOG_AGE_MS) {
    problems.push([
      `REPORT BACKLOG: ${queue.queued} report(s) waiting since ${queue.oldest}: the API server is unreachable or refuses the node's credentials`,
    ]);
  } else if (queue) fine.push(queue.queued === 0 ? "report queue empty" : `report queue: ${queue.queued} on their way`);

  const services = read<
    { name: string; state: string; startMode: string; exitCode?: number; serviceExitCode?: number }[]
  >(d, PATHS.services);
  if (services) {
    const down = services.filter((s) => /^auto/i.test(s.startMode) && s.state !== "Running");
    if (down.length > 0)
      problems.push([
        `SERVICES NOT RUNNING: ${down.map((s) => `${s.name} (${s.state}, exit ${String(s.exitCode ?? "?")}/${String(s.serviceExitCode ?? "?")})`).join(", ")}`,
      ]);
    else
      fine.push(
        `services running: ${
          services
            .filter((s) => s.state === "Running")
            .map((s) => s.name)
            .join(", ") || "none found"
        }`,
      );
  }

  const task = read<{ registered: boolean; state?: string; lastTaskResult?: number; lastRunTime?: string }>(
    d,
    "windows/agent-task.json",
  );
  // An agent installed as a service (nssm) has no task; services.json covers it.
  const asService = services?.some((sv) => sv.name === "winfleet-agent") === true;
  if (task && !task.registered && asService) fine.push("agent runs as the winfleet-agent service");
  else if (task && (!task.registered || task.state !== "Running")) {
    problems.push([
      task.registered
        ? `AGENT NOT RUNNING: scheduled task winfleet-agent is ${task.state ?? "?"}, last result ${String(task.lastTaskResult ?? "?")} at ${task.lastRunTime ?? "?"}`
        : "AGENT NOT REGISTERED: no scheduled task winfleet-agent",
    ]);
  } else if (task) fine.push("agent task running");

  const signature = read<{ status: string; detail?: string }>(d, PATHS.contentSignature);
  if (signature && ["tampered", "wrongly signed", "error"].includes(signature.status))
    problems.push([`CONTENT ${signature.status.toUpperCase()}: ${signature.detail ?? ""}`]);
  else if (signature) fine.push(`content bundle: ${signature.status}`);

  const failed = d.manifest.missing.filter((m) => /^(timed out|failed|could not run|exited|cannot)/.test(m.reason));
  if (failed.length > 0) {
    problems.push([
      `NOT COLLECTED: ${failed.length} source(s); see manifest.json`,
      ...failed.slice(0, LIST_MAX).map((m) => `  ${m.path}: ${m.reason}`),
      ...more(failed.length),
    ]);
  }
  fine.push(`collected ${d.manifest.entries.length} entries from ${d.manifest.collectors.length} sources`);
  return { problems, fine };
}

/** The summary as text: problems first (the first line names the worst), then what is fine. */
export function formatSummary(s: Summary): string {
  const lines = s.problems.length > 0 ? s.problems.flat() : ["OK: nothing wrong found"];
  lines.push("", "fine:", ...s.fine.map((f) => `  ${f}`));
  return `${lines.join("\n")}\n`;
}
