/**
 * `winfleet-agent apply | plan | uninstall`: thin shells over the lifecycle
 * engine. Exit codes are the contract's: 0 converged, 1 failed (the failing
 * component, command, exit code and error output printed and kept in `status`),
 * 2 usage, 3010 reboot required.
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import {
  apply,
  previewApply,
  uninstall,
  type EngineDeps,
  type RunOutcome,
  describeStep,
  disruptionOf,
} from "../lifecycle";
import { createDrainer } from "../report";
import { type LifecycleOptions, type Resolved, resolveOptions } from "../service";
import { failure, printError } from "./errors";
import { EXIT, collectVar, lifecycleOptions } from "./lifecycle-options";
import { progressFor } from "./progress";

function withContent(cmd: Command): Command {
  return lifecycleOptions(cmd)
    .option("--content <dir>", "content: a built bundle, a content source tree, or .ign files and template JSON")
    .option(
      "--template <name>",
      "template name, or name@version (default: the newest version; by the host's Windows build when omitted)",
    )
    .option("--template-version <version>", "template version")
    .option("--node-name <name>", "the node's name (WINFLEET_NODE_NAME; default: the host name)")
    .option("--kubeconfig <file>", "the node's kubeconfig, handed to lprecmds and lpstcmds as KUBECONFIG")
    .option("--var <NAME=VALUE>", "a variable for commands, over the template's (repeatable)", collectVar, [])
    .option("--lenient", "accept and report the 2019 content format's known defects", false)
    .option(
      "--allow-downgrade",
      "accept signed content older than the release this node accepted before under the same key (logged and reported); the config's allowDowngrade otherwise",
    );
}

function report(outcome: RunOutcome, json: boolean): number {
  if (outcome.kind === "failed") {
    const f = outcome.journal.run?.failure;
    if (f) {
      process.stderr.write(
        `apply failed at step ${f.step + 1}: ${f.component} ${f.version}, phase ${f.phase}\n` +
          `  command: ${f.command}\n  ${f.timedOut ? "timed out" : `exit code: ${String(f.exitCode)}`}\n` +
          (f.errorTail.trim() ? `  error output:\n${f.errorTail.replace(/^/gm, "    ")}\n` : ""),
      );
    }
    return EXIT.failed;
  }
  if (outcome.kind === "reboot") {
    if (!json)
      process.stdout.write(
        `reboot required (${outcome.reasons.join("; ")}); run again after the restart to continue\n`,
      );
    return EXIT.reboot;
  }
  if (outcome.kind === "interrupted") return EXIT.failed;
  if (!json) {
    const t = outcome.journal.applied?.template;
    process.stdout.write(
      t ? `converged: ${t.name} ${t.version}${outcome.changed ? "" : " (nothing to change)"}\n` : "uninstalled\n",
    );
  }
  return EXIT.converged;
}

/** The engine's dependencies with the drain a config asks for (the node's kubeconfig, the `drain` knobs). */
function withDrain(r: Resolved, opts: LifecycleOptions, deps: EngineDeps): EngineDeps {
  const kubeconfig = opts.kubeconfig !== undefined ? resolve(opts.kubeconfig) : undefined;
  return { ...deps, drainer: createDrainer(r.config, deps.facts.nodeName, { kubeconfig }) };
}

function usage(message: string): number {
  return printError(message, EXIT.usage);
}

/** Registers the lifecycle commands. */
export function registerLifecycleCommands(program: Command): void {
  withContent(
    program.command("apply").description("converge the host to a template: install, upgrade and uninstall components"),
  ).action(async (opts: LifecycleOptions) => {
    process.exitCode = await (async () => {
      try {
        const r = await resolveOptions(opts);
        if (!r.content) return usage("apply needs --content DIR (or a --config that names content)");
        const progress = progressFor(process.stdout, opts.json ?? false);
        try {
          const outcome = await apply(
            { content: r.content, template: r.template, templateVersion: r.templateVersion, lenient: opts.lenient },
            withDrain(r, opts, r.deps(progress, "winfleet-agent apply")),
          );
          return report(outcome, (opts.json ?? false) || !process.stdout.isTTY);
        } finally {
          progress.close();
        }
      } catch (e) {
        return failure(e);
      }
    })();
  });

  withContent(program.command("plan").description("show what apply would do, step by step; changes nothing")).action(
    async (opts: LifecycleOptions) => {
      process.exitCode = await (async () => {
        try {
          const r = await resolveOptions(opts);
          if (!r.content) return usage("plan needs --content DIR (or a --config that names content)");
          const deps = r.deps({ event() {} }, "winfleet-agent plan");
          const p = await previewApply(
            { content: r.content, template: r.template, templateVersion: r.templateVersion, lenient: opts.lenient },
            deps,
          );
          const steps = p.plan.steps.map((s, i) => ({
            ...s,
            step: i + 1,
            title: describeStep(s),
            ...(disruptionOf(s) !== undefined ? { disruption: disruptionOf(s) } : {}),
          }));
          // A run drains the node before its first disruptive step; a run without one drains nothing.
          const first = steps.find((s) => s.disruption !== undefined);
          const why = [...new Set(steps.flatMap((s) => s.disruption ?? []))];
          const drain = { disruptive: first !== undefined, drainBefore: first?.step ?? null, why };
          if (opts.json) {
            process.stdout.write(
              `${JSON.stringify({ template: { name: p.target.template.name, version: p.target.template.version }, contentDigest: p.contentDigest, steps, drain, unfinished: p.unfinished ? { kind: p.unfinished.run.kind, target: p.unfinished.run.target, done: p.unfinished.run.next, total: p.unfinished.run.steps.length, status: p.unfinished.run.status, resumes: p.unfinished.resumes } : null, missingVariables: p.missing }, null, 2)}\n`,
            );
          } else {
            process.stdout.write(
              `plan for ${p.target.template.name} ${p.target.template.version} (content ${p.contentDigest.slice(0, 12)}): ${steps.length === 0 ? "nothing to do" : `${steps.length} steps`}\n`,
            );
            if (steps.length > 0)
              process.stdout.write(
                first
                  ? `disrupts the node's pods: the node is drained before step ${first.step}, because:\n${why.map((w) => `  - ${w}\n`).join("")}`
                  : "disrupts nothing: the node is not drained\n",
              );
            if (p.unfinished) {
              const u = p.unfinished.run;
              process.stdout.write(
                `an earlier ${u.kind} (${u.status}) stopped at step ${u.next + 1} of ${u.steps.length}; apply ${p.unfinished.resumes ? "resumes it" : "plans afresh from what the host recorded"}\n`,
              );
            }
            let phase = "";
            for (const s of steps) {
              if (s.phase !== phase) process.stdout.write(`  ${(phase = s.phase)}\n`);
              process.stdout.write(
                `    ${String(s.step).padStart(3)}. ${s.component ? `${s.component} ${s.version}  ` : ""}${s.title}${s.disruption !== undefined ? "  [disrupts]" : ""}\n`,
              );
            }
            for (const m of p.missing) process.stderr.write(`apply would refuse: ${m}\n`);
          }
          return p.missing.length > 0 ? EXIT.failed : EXIT.converged;
        } catch (e) {
          return failure(e);
        }
      })();
    },
  );

  lifecycleOptions(
    program.command("uninstall").description("run every installed component's uninstall, then remove their files"),
  ).action(async (opts: LifecycleOptions) => {
    process.exitCode = await (async () => {
      try {
        const r = await resolveOptions(opts);
        const progress = progressFor(process.stdout, opts.json ?? false);
        try {
          return report(
            await uninstall(withDrain(r, opts, r.deps(progress, "winfleet-agent uninstall"))),
            (opts.json ?? false) || !process.stdout.isTTY,
          );
        } finally {
          progress.close();
        }
      } catch (e) {
        return failure(e);
      }
    })();
  });
}
