/**
 * The diagnostics' building block: a collector reads one source (a state file,
 * a log, a command's output) into archive entries through a sink. Each runs
 * under its own time limit, and a collector that hangs — a wedged HNS call, a
 * log on a dead share — is abandoned and recorded as timed out, so no source
 * can hang `diagnose`. Tests inject collectors through this interface.
 */
import { errorMessage } from "../common";
import type { AgentConfig } from "../service";
import type { CommandRunner } from "./command";

/** Where a diagnosis looks, resolved once before any collector runs. */
export interface DiagnoseContext {
  /** The host root (`<root>/.winfleet` holds the agent's state). */
  readonly root: string;
  /** Logs older than this are left out. */
  readonly since: Date;
  readonly platform: NodeJS.Platform;
  /** The agent config file, when one was found. */
  readonly configFile: string | undefined;
  /** The config parsed, or why it could not be. */
  readonly config: AgentConfig | undefined;
  readonly configError: string | undefined;
  /** The agent's own log (the service wrapper's output file). */
  readonly agentLog: string | undefined;
  /** A broker config file named on the command line, over the agent config's. */
  readonly brokerConfigFile: string | undefined;
  /** Where relative broker socket names live. */
  readonly runDir: string;
  /** Runs external commands, killing them when the collector's time is up. */
  readonly run: CommandRunner;
}

/** Where a collector puts what it found. */
export interface Sink {
  /** An archive entry; `source` (default: the collector's) says where it came from. */
  file(path: string, data: string | Buffer, source?: string): void;
  /** Something that could not be collected, and why. */
  missing(path: string, reason: string, source?: string): void;
}

/** One source of evidence. */
export interface Collector {
  /** Short, unique: names it in the manifest. */
  readonly name: string;
  /** Where it reads, for people. */
  readonly source: string;
  /** Overrides the run's time limit. */
  readonly timeoutMs?: number;
  /** Collects into `sink`; must stop when `signal` aborts (it is abandoned either way). */
  collect(ctx: DiagnoseContext, sink: Sink, signal: AbortSignal): Promise<void>;
}

/** One archived entry in the manifest. */
export interface ManifestEntry {
  readonly path: string;
  readonly collector: string;
  readonly source: string;
  readonly size: number;
}

/** One thing that could not be collected. */
export interface MissingEntry {
  readonly path: string;
  readonly collector: string;
  readonly source: string;
  readonly reason: string;
}

/** What every collector gathered. */
export interface Collected {
  readonly files: Map<string, { readonly data: Buffer; readonly collector: string; readonly source: string }>;
  readonly missing: MissingEntry[];
  /** Per collector: how long it ran and how it ended. */
  readonly runs: { readonly collector: string; readonly ms: number; readonly outcome: "ok" | "failed" | "timed out" }[];
}

/** Runs `collectors` at most `parallel` at a time, each within its limit; never rejects. */
export async function runCollectors(
  collectors: readonly Collector[],
  ctx: DiagnoseContext,
  options: { timeoutMs: number; parallel?: number },
): Promise<Collected> {
  const names = new Set<string>();
  for (const c of collectors) {
    if (names.has(c.name)) throw new Error(`two collectors are named ${c.name}`);
    names.add(c.name);
  }
  const out: Collected = { files: new Map(), missing: [], runs: [] };
  const queue = [...collectors];
  const worker = async (): Promise<void> => {
    for (let c = queue.shift(); c; c = queue.shift()) await runOne(c, ctx, options.timeoutMs, out);
  };
  await Promise.all(Array.from({ length: Math.max(1, options.parallel ?? 4) }, worker));
  return out;
}

async function runOne(c: Collector, ctx: DiagnoseContext, defaultTimeout: number, out: Collected): Promise<void> {
  const limit = c.timeoutMs ?? defaultTimeout;
  const abort = new AbortController();
  let open = true; // an abandoned collector's late writes are dropped
  const sink: Sink = {
    file(path, data, source) {
      if (!open) return;
      if (out.files.has(path)) throw new Error(`${c.name}: ${path} was already collected`);
      out.files.set(path, {
        data: Buffer.isBuffer(data) ? data : Buffer.from(data),
        collector: c.name,
        source: source ?? c.source,
      });
    },
    missing(path, reason, source) {
      if (open) out.missing.push({ path, collector: c.name, source: source ?? c.source, reason });
    },
  };
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timed out">((resolve) => {
    timer = setTimeout(() => resolve("timed out"), limit);
  });
  const outcome = await Promise.race([
    c.collect(ctx, sink, abort.signal).then(
      () => "ok" as const,
      (e: unknown) => {
        sink.missing(c.name, `failed: ${errorMessage(e)}`);
        return "failed" as const;
      },
    ),
    timedOut,
  ]);
  clearTimeout(timer);
  if (outcome === "timed out") {
    sink.missing(c.name, `timed out after ${limit} ms; what it collected before is kept`);
    abort.abort();
  }
  open = false;
  out.runs.push({ collector: c.name, ms: Date.now() - started, outcome });
}
