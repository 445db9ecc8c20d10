/**
 * `winfleet-agent status | verify`: what the host has, read from the journal,
 * and whether the files the components laid down are still as applied. Both
 * only read.
 */
import type { Command } from "commander";
import { rootedMapper } from "../ignition";
import { readStatus, type StatusReport, verifyHost } from "../lifecycle";
import { AGENT_VERSION } from "../version";
import { type LifecycleOptions, resolveRoot } from "../service";
import { failure } from "./errors";
import { EXIT, lifecycleOptions } from "./lifecycle-options";

/** The status as a table for people. */
export function formatStatus(s: StatusReport): string {
  const lines = [
    `state      ${s.state}`,
    `template   ${s.template ? `${s.template.name} ${s.template.version}` : "(none)"}`,
    ...(s.contentDigest ? [`content    ${s.contentDigest.slice(0, 12)}`] : []),
    `agent      ${AGENT_VERSION}`,
  ];
  if (s.components.length > 0) {
    const w = Math.max(9, ...s.components.map((c) => c.name.length));
    const v = Math.max(7, ...s.components.map((c) => c.version.length));
    lines.push("", `${"COMPONENT".padEnd(w)}  ${"VERSION".padEnd(v)}  STATE`);
    for (const c of s.components) lines.push(`${c.name.padEnd(w)}  ${c.version.padEnd(v)}  ${c.state}`);
  }
  if (s.run) {
    const where = s.run.step
      ? `; step ${s.run.step.index + 1}: ${s.run.step.component} ${s.run.step.phase} ${s.run.step.title}`
      : "";
    lines.push(
      "",
      `${s.run.kind} ${s.run.target ? `${s.run.target.name} ${s.run.target.version} ` : ""}${s.run.done}/${s.run.total} steps done${where}`,
    );
  }
  if (s.failure) {
    const f = s.failure;
    lines.push(
      "",
      `failed: ${f.component} ${f.version}, phase ${f.phase}`,
      `  command: ${f.command}`,
      `  ${f.timedOut ? "timed out" : `exit code: ${String(f.exitCode)}`}`,
    );
    if (f.errorTail.trim())
      lines.push(
        "  error output:",
        ...f.errorTail
          .trimEnd()
          .split("\n")
          .map((l) => `    ${l}`),
      );
  }
  if (s.reboot) lines.push("", `reboot pending since ${s.reboot.requestedAt}: ${s.reboot.reasons.join("; ")}`);
  const d = s.drain;
  if (d && d.state !== "skipped")
    lines.push(
      "",
      d.state === "drained"
        ? `node drained since ${d.startedAt} (${d.evicted.length} pods evicted); ${d.cordoned ? "uncordoned" : "left cordoned, as it was,"} once the host converged`
        : `draining since ${d.startedAt}: ${d.reasons.join("; ")}`,
      ...d.waiting.map((w) => `  waiting for ${w.pod}: ${w.why}`),
    );
  if (s.history.length > 0) {
    lines.push("", "recent:");
    for (const h of s.history) lines.push(`  ${h.at}  ${h.event}${h.detail ? `  ${h.detail}` : ""}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Registers `status` and `verify`. */
export function registerInspectCommands(program: Command): void {
  lifecycleOptions(
    program
      .command("status")
      .description(
        "the template, each component's version and state, the current or failed step, a pending reboot, recent history",
      ),
  )
    .option("--history <n>", "history entries to show", (v) => Number.parseInt(v, 10), 10)
    .action(async (opts: LifecycleOptions & { history: number }) => {
      process.exitCode = await (async () => {
        try {
          const s = await readStatus(await resolveRoot(opts), opts.history);
          process.stdout.write(
            opts.json ? `${JSON.stringify({ ...s, agentVersion: AGENT_VERSION }, null, 2)}\n` : formatStatus(s),
          );
          return EXIT.converged;
        } catch (e) {
          return failure(e);
        }
      })();
    });

  lifecycleOptions(
    program
      .command("verify")
      .description("compare the files components laid down with what was applied; exit 0 clean, 1 drift"),
  ).action(async (opts: LifecycleOptions) => {
    process.exitCode = await (async () => {
      try {
        const root = await resolveRoot(opts);
        const report = await verifyHost(root, rootedMapper(root));
        if (opts.json)
          process.stdout.write(
            `${JSON.stringify({ drift: report.items.length > 0, checked: report.checked, items: report.items }, null, 2)}\n`,
          );
        else if (report.items.length === 0) process.stdout.write(`no drift: ${report.checked} paths as applied\n`);
        else {
          process.stdout.write(`drift in ${report.items.length} of ${report.checked} paths:\n`);
          for (const i of report.items) process.stdout.write(`  ${i.problem.padEnd(8)} ${i.path}  (${i.component})\n`);
        }
        return report.items.length > 0 ? EXIT.failed : EXIT.converged;
      } catch (e) {
        return failure(e);
      }
    })();
  });
}
