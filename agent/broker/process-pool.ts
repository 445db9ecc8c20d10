/**
 * The host processes started for clients. One process per name; a process lives
 * exactly as long as its client's KeepAlive stream (then its whole tree is killed
 * and its firewall rules removed). Each is recorded on disk, so a process left by
 * an earlier broker — after a crash or restart — is found: listed as an orphan,
 * killed rather than duplicated when its name is started again, and its
 * recycled pid is never mistaken for it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import {
  baseEnvironment,
  type ConfinedDir,
  confinedDir,
  AgentError,
  AgentErrorCode,
  errorMessage,
  type Logger,
  readdirIn,
  readFileIn,
  removeIn,
  writeFileIn,
} from "../common";
import { exitOf } from "./child-exit";
import type { Expose, Firewall } from "./firewall";
import type { ProcessHost } from "./process-host";

/** What to start. */
export interface StartSpec {
  readonly name: string;
  readonly binary: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly dir: string;
  readonly exposes: readonly Expose[];
}

/** Where a waiting client receives output; `false` from a write asks the pool to pause until `drain`. */
export interface OutputSink {
  stdout(chunk: Buffer): boolean;
  stderr(chunk: Buffer): boolean;
  onDrain(resume: () => void): void;
  /** Called when the client goes away: output is no longer forwarded. */
  onGone(stop: () => void): void;
}

/** Output held until a client waits, so nothing written before Wait is lost. */
const HELD_OUTPUT_LIMIT = 4 * 1024 * 1024;

interface Running {
  readonly spec: StartSpec;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<number>;
  readonly startedAt: string;
  exitCode: number | undefined;
  /** Output in arrival order while no sink is attached. */
  readonly held: { readonly err: boolean; readonly data: Buffer }[];
  heldBytes: number;
  sink: ((err: boolean, data: Buffer) => void) | undefined;
  waited: boolean;
}

/** What the broker keeps on disk for each process it starts, so a later broker can find it. */
export interface ProcessRecord {
  readonly name: string;
  readonly pid: number;
  /** The OS's identity of the process (its start time), so a recycled pid is never taken for it. */
  readonly identity: string;
  /** The binary run. */
  readonly path: string;
  /** RFC 3339. */
  readonly startedAt: string;
  /** The broker that started it. */
  readonly brokerPid: number;
}

/** One managed process as `ListProcesses` reports it. */
export interface ProcessInfo {
  readonly name: string;
  readonly pid: number;
  readonly startedAt: string;
  readonly path: string;
  /** `orphaned`: left by an earlier broker, still running, with no client to end it. */
  readonly state: "running" | "exited" | "orphaned";
  /** Set once it exited. */
  readonly exitCode?: number;
  readonly brokerPid: number;
}

/**
 * Reads a process record; anything unreadable counts as no record. Records of older brokers hold only pid and identity.
 */
function record(name: string, text: string): ProcessRecord | undefined {
  try {
    const v = JSON.parse(text) as Partial<Record<keyof ProcessRecord, unknown>>;
    if (typeof v.pid !== "number" || typeof v.identity !== "string") return undefined;
    const str = (x: unknown): string => (typeof x === "string" ? x : "");
    return {
      name,
      pid: v.pid,
      identity: v.identity,
      path: str(v.path),
      startedAt: str(v.startedAt),
      brokerPid: typeof v.brokerPid === "number" ? v.brokerPid : 0,
    };
  } catch {
    return undefined;
  }
}

/**
 * The processes recorded under a broker state directory, each with whether it still runs (read without a broker:
 * `diagnose`).
 */
export async function readProcessRecords(
  stateDir: string | ConfinedDir,
  host: ProcessHost,
): Promise<{ record: ProcessRecord; alive: boolean }[]> {
  const dir = recordsDir(stateDir);
  const out: { record: ProcessRecord; alive: boolean }[] = [];
  for (const file of readdirIn(dir)
    .filter((n) => n.endsWith(".json"))
    .sort()) {
    const rec = record(file.slice(0, -5), await readText(dir, file));
    if (rec) out.push({ record: rec, alive: rec.identity !== "" && (await host.identity(rec.pid)) === rec.identity });
  }
  return out;
}

/**
 * Where a broker state directory keeps its process records: `processes` below it, reached without
 * following a link (the agent's own, below `<root>/.winfleet/broker`, through its state directory's walk).
 */
function recordsDir(stateDir: string | ConfinedDir): ConfinedDir {
  return typeof stateDir === "string" ? confinedDir(stateDir, ["processes"]) : stateDir.sub("processes");
}

async function readText(dir: ConfinedDir, name: string): Promise<string> {
  return ((await readFileIn(dir, name).catch(() => undefined)) ?? Buffer.alloc(0)).toString("utf8");
}

/** Host processes by name. */
export class ProcessPool {
  private readonly running = new Map<string, Running>();
  /** Names whose start is under way (between the name's check and its process running). */
  private readonly starting = new Set<string>();

  private readonly records: ConfinedDir;

  constructor(
    private readonly stateDir: string | ConfinedDir,
    private readonly host: ProcessHost,
    private readonly firewall: Firewall,
    private readonly log: Logger,
    /** What every child inherits (see environment.ts); the broker's own environment is never passed whole. */
    private readonly baseEnv: Readonly<Record<string, string>> = baseEnvironment(process.env, process.platform),
  ) {
    this.records = recordsDir(stateDir);
  }

  /**
   * Run once at start-up: forgets the records of processes that ended while no
   * broker watched, and returns the names of those still running (orphans).
   * Orphans are left running — one may be a kubelet whose client reconnects and
   * asks for it again (then it is replaced, as wins did), and what has no client
   * any more is for an operator to see (`prc ls`) and end (`prc kill --orphans`).
   */
  async adoptRecords(): Promise<string[]> {
    const orphans: string[] = [];
    for (const { record: rec, alive } of await readProcessRecords(this.stateDir, this.host)) {
      if (this.running.has(rec.name)) continue;
      if (alive) orphans.push(rec.name);
      else await this.forget(rec.name);
    }
    return orphans;
  }

  private async forget(name: string): Promise<void> {
    await this.firewall.close(name).catch(() => undefined);
    removeIn(this.records, `${name}.json`);
  }

  private async killStale(name: string): Promise<boolean> {
    const rec = record(name, await readText(this.records, `${name}.json`));
    let killed = false;
    if (rec && (await this.host.identity(rec.pid)) === rec.identity) {
      this.log.warn("found stale process, killing it to start afresh", { name, pid: rec.pid });
      await this.host.killTree(rec.pid);
      killed = true;
    }
    await this.forget(name);
    return killed;
  }

  /** The processes this broker runs (or ran, until their client lets go) and the orphans an earlier one left. */
  async list(): Promise<ProcessInfo[]> {
    const out: ProcessInfo[] = [...this.running.values()].map((e) => ({
      name: e.spec.name,
      pid: e.pid,
      startedAt: e.startedAt,
      path: e.spec.binary,
      state: e.exitCode === undefined ? "running" : "exited",
      ...(e.exitCode !== undefined ? { exitCode: e.exitCode } : {}),
      brokerPid: process.pid,
    }));
    for (const { record: rec, alive } of await readProcessRecords(this.stateDir, this.host)) {
      if (this.running.has(rec.name) || !alive) continue;
      out.push({
        name: rec.name,
        pid: rec.pid,
        startedAt: rec.startedAt,
        path: rec.path,
        state: "orphaned",
        brokerPid: rec.brokerPid,
      });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Ends the named processes and, with `orphans`, every orphan; returns the names
   * ended. Every name is checked first, so an unknown one ends nothing.
   */
  async kill(names: readonly string[], orphans: boolean): Promise<string[]> {
    const listed = await this.list();
    const known = new Map(listed.map((p) => [p.name, p]));
    const unknown = names.filter((n) => !known.has(n));
    if (unknown.length > 0)
      throw new AgentError(
        AgentErrorCode.NotFound,
        `no managed process named ${unknown.join(", ")} (see prc ls); nothing was killed`,
      );
    const targets = new Set([
      ...names,
      ...(orphans ? listed.filter((p) => p.state === "orphaned").map((p) => p.name) : []),
    ]);
    const killed: string[] = [];
    for (const name of [...targets].sort()) {
      if (this.running.has(name)) await this.release(name);
      else await this.killStale(name);
      this.log.info("killed host process on request", { name });
      killed.push(name);
    }
    return killed;
  }

  /**
   * Starts `request` with the binary `prepare` makes (the copy it runs);
   * returns once the process runs. The name is taken first, and a stale
   * process of that name killed, before `prepare` writes anything: on Windows
   * the file a running program was started from cannot be replaced, so a copy
   * made while another client's process, or an orphan, still runs it would fail
   * where the name's owner or the orphan is the answer.
   */
  async start(request: Omit<StartSpec, "binary">, prepare: () => Promise<string>): Promise<void> {
    if (this.running.has(request.name) || this.starting.has(request.name)) {
      throw new AgentError(
        AgentErrorCode.AlreadyExists,
        `process ${request.name} is already running for another client`,
      );
    }
    this.starting.add(request.name);
    try {
      await this.killStale(request.name);
      await this.spawn({ ...request, binary: await prepare() });
    } finally {
      this.starting.delete(request.name);
    }
  }

  private async spawn(spec: StartSpec): Promise<void> {
    const child = spawn(spec.binary, [...spec.args], {
      cwd: spec.dir,
      env: { ...this.baseEnv, ...spec.env },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so the whole tree can be killed at once.
      detached: process.platform !== "win32",
      windowsHide: true,
    });
    const exited = exitOf(child);
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (e) =>
        reject(new AgentError(AgentErrorCode.ApplyFailed, `could not start ${spec.binary}: ${errorMessage(e)}`)),
      );
    });
    const pid = child.pid ?? -1;
    const startedAt = new Date().toISOString();
    const entry: Running = {
      spec,
      child,
      pid,
      exited,
      startedAt,
      exitCode: undefined,
      held: [],
      heldBytes: 0,
      sink: undefined,
      waited: false,
    };
    void exited.then((code) => (entry.exitCode = code));
    // Listen at once: Node discards unread child output when the child exits.
    const streams = [child.stdout, child.stderr].filter((st): st is Readable => st !== null);
    const take =
      (err: boolean) =>
      (data: Buffer): void => {
        if (entry.sink) return entry.sink(err, data);
        entry.held.push({ err, data });
        entry.heldBytes += data.length;
        if (entry.heldBytes > HELD_OUTPUT_LIMIT) streams.forEach((st) => st.pause()); // resumed by attach()
      };
    child.stdout?.on("data", take(false));
    child.stderr?.on("data", take(true));
    this.running.set(spec.name, entry);
    try {
      await writeFileIn(
        this.records,
        `${spec.name}.json`,
        JSON.stringify({
          name: spec.name,
          pid,
          identity: (await this.host.identity(pid)) ?? "",
          path: spec.binary,
          startedAt,
          brokerPid: process.pid,
        } satisfies ProcessRecord),
        { mode: 0o600 },
      );
      await this.firewall.open(spec.name, spec.exposes);
    } catch (e) {
      await this.release(spec.name);
      throw new AgentError(AgentErrorCode.ApplyFailed, `could not register ${spec.name}: ${errorMessage(e)}`);
    }
    this.log.info("started host process", { name: spec.name, pid, args: spec.args.length });
  }

  /** Streams the process's output into `sink` until it exits; resolves with its exit code. */
  async attach(name: string, sink: OutputSink): Promise<number> {
    const entry = this.running.get(name);
    if (!entry) throw new AgentError(AgentErrorCode.NotFound, `no process named ${name} is running`);
    if (entry.waited) throw new AgentError(AgentErrorCode.AlreadyExists, `process ${name} is already being waited on`);
    entry.waited = true;
    const streams = [entry.child.stdout, entry.child.stderr].filter((s): s is Readable => s !== null);
    const pause = (): void => streams.forEach((s) => s.pause());
    const resume = (): void => streams.forEach((s) => s.resume());
    let gone = false;
    sink.onGone(() => {
      gone = true;
      resume(); // keep draining so the process never blocks on a full pipe
    });
    let waitingForDrain = false;
    const forward = (err: boolean, chunk: Buffer): void => {
      if (gone) return;
      if (!(err ? sink.stderr(chunk) : sink.stdout(chunk)) && !waitingForDrain) {
        waitingForDrain = true;
        pause();
        sink.onDrain(() => {
          waitingForDrain = false;
          resume();
        });
      }
    };
    for (const h of entry.held.splice(0)) forward(h.err, h.data);
    entry.heldBytes = 0;
    entry.sink = forward;
    if (!waitingForDrain) resume();
    return entry.exited;
  }

  /** Ends a process: kills its tree, removes its rules and record. Safe to call twice. */
  async release(name: string): Promise<void> {
    const entry = this.running.get(name);
    if (!entry) return;
    this.running.delete(name);
    const alive = entry.child.exitCode === null && entry.child.signalCode === null;
    if (alive) await this.host.killTree(entry.pid);
    await this.firewall
      .close(name)
      .catch((e: unknown) => this.log.warn("could not remove firewall rules", { name, error: errorMessage(e) }));
    removeIn(this.records, `${name}.json`);
    this.log.info("released host process", { name, pid: entry.pid, killed: alive });
  }

  /** Names of running processes. */
  names(): string[] {
    return [...this.running.keys()];
  }

  /** Releases every process (broker shutdown). */
  async shutdown(): Promise<void> {
    await Promise.all(this.names().map((n) => this.release(n)));
  }
}
