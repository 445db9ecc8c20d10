/**
 * The broker's evidence: its config, and the host processes it manages —
 * asked of the running broker, or, when none answers, read from the records
 * it keeps (every live one is then an orphan unless its broker still runs).
 */
import { join } from "node:path";
import type * as Client from "../broker/client";
import {
  type BrokerConfig,
  endpointPath,
  loadBrokerConfig,
  parseBrokerConfig,
  linuxProcessHost,
  windowsProcessHost,
  type ProcessInfo,
  readProcessRecords,
} from "../broker";
import { errorMessage } from "../common";
import { stateDir, stateOf } from "../lifecycle";
import { PATHS } from "./agent-collectors";
import type { Collector, DiagnoseContext } from "./collector";

/** The broker config in force for `ctx`, and where it came from; undefined when there is no broker. */
export async function brokerConfigOf(
  ctx: DiagnoseContext,
): Promise<{ config: BrokerConfig; from: string } | undefined> {
  if (ctx.brokerConfigFile) return { config: await loadBrokerConfig(ctx.brokerConfigFile), from: ctx.brokerConfigFile };
  const b = ctx.config?.broker;
  if (b === undefined) return undefined;
  if (typeof b === "string") return { config: await loadBrokerConfig(b), from: b };
  return {
    config: parseBrokerConfig(JSON.stringify(b), `${ctx.configFile ?? "agent config"}: broker`),
    from: `${ctx.configFile ?? "agent config"} (inline)`,
  };
}

/* eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on use: a diagnosis without a broker never loads gRPC */
const client = (): typeof Client => require("../broker/client") as typeof Client;

/** A broker that takes longer is taken as not answering, and its records are read instead. */
const BROKER_ANSWER_MS = 5000;

/** A row of broker/processes.json. */
export type ProcessRow = ProcessInfo & { readonly note?: string };

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

const brokerConfig: Collector = {
  name: "broker-config",
  source: "the broker config (the agent config's broker, or --broker-config)",
  async collect(ctx, sink) {
    const found = await brokerConfigOf(ctx);
    if (!found) sink.missing(PATHS.brokerConfig, "no broker configured (the agent config has no broker)");
    else
      sink.file(
        PATHS.brokerConfig,
        `${JSON.stringify({ from: found.from, config: found.config }, null, 2)}\n`,
        found.from,
      );
  },
};

const processes: Collector = {
  name: "broker-processes",
  source: "AgentService.ListProcesses, else the broker's process records",
  async collect(ctx, sink, signal) {
    const found = await brokerConfigOf(ctx);
    if (!found) {
      sink.missing(PATHS.processes, "no broker configured");
      return;
    }
    const socket = endpointPath(found.config.listen, ctx.platform, ctx.runDir);
    const dir = found.config.stateDir ?? join(stateDir(ctx.root), "broker");
    const records = found.config.stateDir ?? stateOf(ctx.root).sub("broker");
    let brokerError: string;
    try {
      let timer: NodeJS.Timeout | undefined;
      const live = await Promise.race([
        client().listProcesses(socket),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`the broker did not answer within ${BROKER_ANSWER_MS} ms`)),
            BROKER_ANSWER_MS,
          );
        }),
      ]).finally(() => clearTimeout(timer));
      const rows: ProcessRow[] = live.Processes.map((p) => ({
        name: p.Name,
        pid: p.Pid,
        startedAt: p.StartedAt,
        path: p.Path,
        state: p.State as ProcessInfo["state"],
        ...(p.ExitCode >= 0 ? { exitCode: p.ExitCode } : {}),
        brokerPid: p.BrokerPid,
      }));
      sink.file(PATHS.processes, `${JSON.stringify({ from: "broker", socket, processes: rows }, null, 2)}\n`, socket);
      return;
    } catch (e) {
      brokerError = errorMessage(e);
    }
    if (signal.aborted) return;
    const host = ctx.platform === "win32" ? windowsProcessHost : linuxProcessHost;
    const rows: ProcessRow[] = (await readProcessRecords(records, host)).map(({ record: r, alive }) => {
      const base = { name: r.name, pid: r.pid, startedAt: r.startedAt, path: r.path, brokerPid: r.brokerPid };
      if (!alive) return { ...base, state: "exited", note: "ended while no broker watched (its exit code is unknown)" };
      if (r.brokerPid > 0 && pidAlive(r.brokerPid))
        return { ...base, state: "running", note: "its broker runs but does not answer" };
      return { ...base, state: "orphaned" };
    });
    sink.file(
      PATHS.processes,
      `${JSON.stringify({ from: "records", stateDir: dir, brokerError, processes: rows }, null, 2)}\n`,
      dir,
    );
  },
};

/** The broker's collectors. */
export const brokerCollectors: readonly Collector[] = [brokerConfig, processes];
