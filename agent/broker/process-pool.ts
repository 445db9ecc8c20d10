/**
 * The host processes started for clients. One process per name; a process lives
 * exactly as long as its client's KeepAlive stream (then its whole tree is killed
 * and its firewall rules removed). Each is recorded on disk, so a process left by
 * an earlier broker — after a crash or restart — is found and killed rather than
 * duplicated, and its recycled pid is never mistaken for it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { mkdir, readFile, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { writeFileAtomic } from "../common/atomic-file";
import { baseEnvironment } from "../common/child-environment";
import { AgentError, AgentErrorCode, errorMessage } from "../common/errors";
import type { Logger } from "../common/log";
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
  /** Output in arrival order while no sink is attached. */
  readonly held: { readonly err: boolean; readonly data: Buffer }[];
  heldBytes: number;
  sink: ((err: boolean, data: Buffer) => void) | undefined;
  waited: boolean;
}

/** Reads a process record; anything unreadable counts as no record. */
function record(text: string): { pid: number; identity: string } | undefined {
  try {
    const v = JSON.parse(text) as { pid?: unknown; identity?: unknown };
    return typeof v.pid === "number" && typeof v.identity === "string" ? { pid: v.pid, identity: v.identity } : undefined;
  } catch {
    return undefined;
  }
}

/** The exit code a client sees: the code, or 128 + the signal number when killed. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}

/** Host processes by name. */
export class ProcessPool {
  private readonly running = new Map<string, Running>();

  constructor(
    private readonly stateDir: string,
    private readonly host: ProcessHost,
    private readonly firewall: Firewall,
    private readonly log: Logger,
    /** What every child inherits (see environment.ts); the broker's own environment is never passed whole. */
    private readonly baseEnv: Readonly<Record<string, string>> = baseEnvironment(process.env, process.platform),
  ) {}

  private recordFile(name: string): string {
    return join(this.stateDir, "processes", `${name}.json`);
  }

  /** Kills every recorded process still alive that this broker did not start (run once at start-up). */
  async cleanStale(): Promise<string[]> {
    const dir = join(this.stateDir, "processes");
    const names = await readdir(dir).catch(() => [] as string[]);
    const killed: string[] = [];
    for (const file of names.filter((n) => n.endsWith(".json"))) {
      const name = file.slice(0, -5);
      if (this.running.has(name)) continue;
      if (await this.killStale(name)) killed.push(name);
    }
    return killed;
  }

  private async killStale(name: string): Promise<boolean> {
    const rec = record(await readFile(this.recordFile(name), "utf8").catch(() => ""));
    let killed = false;
    if (rec && (await this.host.identity(rec.pid)) === rec.identity) {
      this.log.warn("found stale process, killing it to start afresh", { name, pid: rec.pid });
      await this.host.killTree(rec.pid);
      killed = true;
    }
    await this.firewall.close(name).catch(() => undefined);
    await rm(this.recordFile(name), { force: true });
    return killed;
  }

  /** Starts `spec`; returns once the process runs. */
  async start(spec: StartSpec): Promise<void> {
    if (this.running.has(spec.name)) {
      throw new AgentError(AgentErrorCode.AlreadyExists, `process ${spec.name} is already running for another client`);
    }
    await this.killStale(spec.name);
    const child = spawn(spec.binary, [...spec.args], {
      cwd: spec.dir,
      env: { ...this.baseEnv, ...spec.env },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group, so the whole tree can be killed at once.
      detached: process.platform !== "win32",
      windowsHide: true,
    });
    const exited = new Promise<number>((resolve) => child.once("close", (code, signal) => resolve(exitCodeOf(code, signal))));
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (e) => reject(new AgentError(AgentErrorCode.ApplyFailed, `could not start ${spec.binary}: ${errorMessage(e)}`)));
    });
    const pid = child.pid ?? -1;
    const entry: Running = { spec, child, pid, exited, held: [], heldBytes: 0, sink: undefined, waited: false };
    // Listen at once: Node discards unread child output when the child exits.
    const streams = [child.stdout, child.stderr].filter((st): st is Readable => st !== null);
    const take = (err: boolean) => (data: Buffer): void => {
      if (entry.sink) return entry.sink(err, data);
      entry.held.push({ err, data });
      entry.heldBytes += data.length;
      if (entry.heldBytes > HELD_OUTPUT_LIMIT) streams.forEach((st) => st.pause()); // resumed by attach()
    };
    child.stdout?.on("data", take(false));
    child.stderr?.on("data", take(true));
    this.running.set(spec.name, entry);
    try {
      await mkdir(join(this.stateDir, "processes"), { recursive: true, mode: 0o700 });
      await writeFileAtomic(this.recordFile(spec.name), JSON.stringify({ pid, identity: (await this.host.identity(pid)) ?? "" }), { mode: 0o600 });
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
    await this.firewall.close(name).catch((e: unknown) => this.log.warn("could not remove firewall rules", { name, error: errorMessage(e) }));
    await rm(this.recordFile(name), { force: true });
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
