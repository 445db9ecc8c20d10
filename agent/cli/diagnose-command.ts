/**
 * `winfleet-agent diagnose`: the evidence an operator of a node needs, in one
 * archive (or, with `--summary`, on one screen). Every source has a time
 * limit, and the command exits when the last one is done or abandoned, so a
 * hung source (a wedged HNS, a dead share) cannot hang it.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Command } from "commander";
import {
  writeFileAtomic,
  AgentError,
  AgentErrorCode,
  errorMessage,
  WINDOWS_AGENT_CONFIG,
  defaultRoot,
  defaultRunDir,
} from "../common";
import { archiveOf, diagnose, formatSummary, frameArchive, summarize } from "../diagnose";
import { loadAgentConfig } from "../service";

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30m`, `2h`, `7d`… in milliseconds; an error naming the option and the value otherwise. */
export function parseDuration(value: string, option = "--since"): number {
  const m = /^(\d+(?:\.\d+)?)([smhd])$/.exec(value.trim());
  const ms = m ? Number(m[1]) * (UNITS[m[2] ?? ""] ?? 0) : NaN;
  if (!(ms > 0))
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${option} ${value}: expected a duration such as 90s, 30m, 2h or 7d`,
    );
  return ms;
}

interface DiagnoseFlags {
  readonly out?: string;
  readonly since: string;
  readonly root?: string;
  readonly config?: string;
  readonly agentLog?: string;
  readonly brokerConfig?: string;
  readonly timeout: string;
  readonly summary?: boolean;
}

/** Ends the process once `text` is out: an abandoned source must not keep it alive. */
function finish(code: number, text = "", stream: NodeJS.WriteStream = process.stdout): void {
  stream.write(text, () => process.exit(code));
}

/** Registers `diagnose`. */
export function registerDiagnoseCommand(program: Command): void {
  program
    .command("diagnose")
    .description(
      "collect the node's evidence (status, journal, logs, drift, broker processes, config without secrets, system state) into one tar.gz",
    )
    .option(
      "--out <file>",
      "the archive to write (default: winfleet-diagnose-<node>-<time>.tar.gz here; with --summary, none unless given); - prints it framed for a container log, as winfleet diagnose NODE reads it",
    )
    .option("--since <duration>", "how far back logs go, e.g. 30m, 2h, 7d", "24h")
    .option(
      "--root <dir>",
      "host root whose .winfleet state to read (default: the config's root, else the system drive's root)",
    )
    .option("--config <file>", `the agent config (default on Windows: ${WINDOWS_AGENT_CONFIG})`)
    .option("--agent-log <file>", "the agent's log (default: agent.log beside the config)")
    .option(
      "--broker-config <file>",
      "the broker config, for a broker run on its own (default: the agent config's broker)",
    )
    .option("--timeout <duration>", "the most one source may take", "30s")
    .option("--summary", "print what is wrong, then what is fine, on one screen; exit 1 when something is wrong")
    .action(async (flags: DiagnoseFlags) => {
      let since: Date;
      let timeoutMs: number;
      try {
        since = new Date(Date.now() - parseDuration(flags.since));
        timeoutMs = parseDuration(flags.timeout, "--timeout");
      } catch (e) {
        finish(2, `error: ${errorMessage(e)}\n`, process.stderr);
        return;
      }
      try {
        const configFile = flags.config
          ? resolve(flags.config)
          : process.platform === "win32" && existsSync(WINDOWS_AGENT_CONFIG)
            ? WINDOWS_AGENT_CONFIG
            : undefined;
        if (flags.config && !existsSync(configFile ?? ""))
          throw new AgentError(AgentErrorCode.InvalidInput, `--config ${flags.config}: no such file`);
        const configRoot = configFile
          ? await loadAgentConfig(configFile).then(
              (c) => c.root,
              () => undefined,
            )
          : undefined;
        const besideConfig = configFile ? join(dirname(configFile), "agent.log") : undefined;
        const d = await diagnose({
          root: resolve(flags.root ?? configRoot ?? defaultRoot()),
          ...(configFile ? { configFile } : {}),
          ...(flags.agentLog
            ? { agentLog: resolve(flags.agentLog) }
            : besideConfig && existsSync(besideConfig)
              ? { agentLog: besideConfig }
              : {}),
          ...(flags.brokerConfig ? { brokerConfigFile: resolve(flags.brokerConfig) } : {}),
          since,
          timeoutMs,
          runDir: defaultRunDir(),
        });
        let text = "";
        if (flags.out === "-") {
          // Text, not raw bytes: the archive crosses a container log (see diagnose/transport.ts).
          if (flags.summary) process.stderr.write(formatSummary(summarize(d)));
          finish(0, frameArchive(archiveOf(d)));
          return;
        }
        if (flags.out || !flags.summary) {
          const stamp = d.manifest.createdAt.replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
          const out = resolve(flags.out ?? `winfleet-diagnose-${d.manifest.host}-${stamp}.tar.gz`);
          await writeFileAtomic(out, archiveOf(d), { mode: 0o600 }).catch((e: unknown) => {
            throw new AgentError(
              AgentErrorCode.InvalidInput,
              `--out ${out}: cannot write the archive there (${(e as NodeJS.ErrnoException).code ?? errorMessage(e)}); nothing was written`,
            );
          });
          const missing = d.manifest.missing.length;
          text = `wrote ${out}: ${d.manifest.entries.length} entries${missing > 0 ? `, ${missing} not collected (see manifest.json)` : ""}\n`;
          if (flags.summary) process.stderr.write(text);
        }
        if (flags.summary) {
          const s = summarize(d);
          finish(s.problems.length > 0 ? 1 : 0, formatSummary(s));
          return;
        }
        finish(0, text);
      } catch (e) {
        finish(1, `error: ${errorMessage(e)}\n`, process.stderr);
      }
    });
}
