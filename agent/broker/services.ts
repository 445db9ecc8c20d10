/**
 * The wins-compatible gRPC handlers. Each is a thin adapter: parse the request,
 * call the pool or the host, map errors through {@link toServiceError}.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { release, version as osVersion } from "node:os";
import { dirname } from "node:path";
import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { AgentError, AgentErrorCode } from "../common/errors";
import type { Logger } from "../common/log";
import { AGENT_VERSION } from "../version";
import { prepareBinary, processName } from "./binary";
import type { Expose } from "./firewall";
import { ApplicationInfoResponseSchema, ApplicationInfoSchema } from "./generated/wins/application_pb";
import { HostGetVersionResponseSchema, HostVersionSchema } from "./generated/wins/host_pb";
import { VoidSchema } from "./generated/wins/common_pb";
import {
  type ProcessKeepAliveRequest,
  type ProcessStartRequest,
  type ProcessStartResponse,
  type ProcessWaitRequest,
  type ProcessWaitResponse,
  ProcessStartResponseSchema,
  ProcessWaitResponseSchema,
  RunExposeProtocol,
} from "./generated/wins/process_pb";
import type { ProcessPool } from "./process-pool";
import { failStream, toServiceError } from "./status";
import type { ProcessPathPolicy } from "./whitelist";
import type { MessageShape } from "@bufbuild/protobuf";

type Void = MessageShape<typeof VoidSchema>;
/** Trailing metadata key carrying the host process's exit code (additive; old clients ignore it). */
export const EXIT_CODE_METADATA = "winfleet-exit-code";

function unary<Req, Res>(work: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    work(call.request).then((res) => callback(null, res), (e: unknown) => callback(toServiceError(e)));
  };
}

/** `ApplicationService`: the agent's identity. */
export function applicationService(entryFile: string): grpc.UntypedServiceImplementation {
  return {
    Info: unary(async () => {
      const checksum = createHash("sha1").update(await readFile(entryFile)).digest("hex");
      return create(ApplicationInfoResponseSchema, { Info: create(ApplicationInfoSchema, { Checksum: checksum, Version: AGENT_VERSION, Commit: process.env.WINFLEET_COMMIT ?? "" }) });
    }),
  };
}

/** `HostService`: the OS version (the registry on Windows; the kernel release elsewhere). */
export function hostService(readVersion: () => Promise<Record<string, string>> = linuxHostVersion): grpc.UntypedServiceImplementation {
  return { GetVersion: unary(async () => create(HostGetVersionResponseSchema, { Data: create(HostVersionSchema, await readVersion()) })) };
}

function linuxHostVersion(): Promise<Record<string, string>> {
  const [major = "", minor = "", build = ""] = release().split(/[.-]/);
  return Promise.resolve({ CurrentMajorVersionNumber: major, CurrentMinorVersionNumber: minor, CurrentBuildNumber: build, CurrentBuild: build, BuildLabEx: osVersion(), ReleaseId: release(), UBR: "" });
}

/** A service whose every method answers UNIMPLEMENTED with a reason (HNS, routes, networks off Windows). */
export function unavailableService(methods: readonly string[], reason: string): grpc.UntypedServiceImplementation {
  const refuse = (_call: unknown, callback: grpc.sendUnaryData<unknown>): void =>
    callback(toServiceError(new AgentError(AgentErrorCode.Unsupported, reason)));
  return Object.fromEntries(methods.map((m) => [m, refuse]));
}

/** Parses `NAME=value` items. */
function parseEnvs(items: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new AgentError(AgentErrorCode.InvalidInput, `env item ${JSON.stringify(item)} is not NAME=value`);
    env[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return env;
}

/**
 * `ProcessWaitResponse{StdOut|StdErr: chunks}` in protobuf's wire format (field
 * 1 or 2, length-delimited), built in one buffer: protobuf-es's writer would
 * grow a buffer for a large bytes field and copy it again on the way out.
 */
export function encodeOutput(err: boolean, chunks: readonly Buffer[], bytes: number): Buffer {
  let header = 1;
  for (let n = bytes; n >= 0x80; n >>>= 7) header++;
  const out = Buffer.allocUnsafe(1 + header + bytes);
  out[0] = err ? 0x12 : 0x0a;
  let at = 1;
  let n = bytes;
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  for (const c of chunks) at += c.copy(out, at);
  return out;
}

/** The most output one Wait message carries (wins clients accept 4 MiB by default). */
const OUTPUT_BATCH_BYTES = 1024 * 1024;
/** How much output may be written and not yet taken by the stream before the process is paused. */
const OUTPUT_IN_FLIGHT_BYTES = 8 * 1024 * 1024;

/**
 * A process's output as few messages as keep it timely: what the pipes deliver
 * in one turn of the event loop (64 KiB a read) goes out as one message, up to
 * {@link OUTPUT_BATCH_BYTES}, in the order written (a switch between stdout and
 * stderr sends what was gathered). Per message, protobuf, gRPC and HTTP/2 each
 * cost a copy and a header; a fast writer's output is dozens of reads a turn.
 *
 * Backpressure counts bytes rather than following the stream's own signal: a
 * gRPC stream reports itself full after every large message, and pausing the
 * process there would leave its pipe and the socket idle by turns.
 */
export class OutputBatcher {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private err = false;
  private scheduled = false;
  private inFlight = 0;
  private waiting: (() => void)[] = [];

  /** `send` writes one message of `chunks` and calls `written` once the stream has taken it. */
  constructor(
    private readonly send: (err: boolean, chunks: readonly Buffer[], bytes: number, written: () => void) => void,
    private readonly limit = OUTPUT_IN_FLIGHT_BYTES,
  ) {}

  /** Adds output; false asks the writer to pause until {@link whenRoom} calls back. */
  add(err: boolean, chunk: Buffer): boolean {
    if (this.bytes > 0 && err !== this.err) this.flush();
    this.err = err;
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes >= OUTPUT_BATCH_BYTES) this.flush();
    else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.flush();
      });
    }
    return this.hasRoom();
  }

  /** Sends what was gathered now. */
  flush(): void {
    if (this.bytes === 0) return;
    const { chunks, bytes } = this;
    this.chunks = [];
    this.bytes = 0;
    this.inFlight += bytes;
    this.send(this.err, chunks, bytes, () => {
      this.inFlight -= bytes;
      if (!this.hasRoom()) return;
      const waiting = this.waiting;
      this.waiting = [];
      for (const resume of waiting) resume();
    });
  }

  /** Calls `resume` once there is room again (at once if there is). */
  whenRoom(resume: () => void): void {
    if (this.hasRoom()) resume();
    else this.waiting.push(resume);
  }

  private hasRoom(): boolean {
    return this.inFlight + this.bytes < this.limit;
  }
}

/** `ProcessService`: Start, Wait, KeepAlive with wins's semantics, fixed where wins was wrong. */
export function processService(pool: ProcessPool, policy: Pick<ProcessPathPolicy, "check">, log: Logger): grpc.UntypedServiceImplementation {
  const Start = unary<ProcessStartRequest, ProcessStartResponse>(async (req) => {
    await policy.check(req.Path);
    const binary = await prepareBinary(req.Path, req.Checksum);
    const name = processName(req.Path);
    const exposes: Expose[] = req.Exposes.map((e) => {
      if (e.Port < 0 || e.Port > 65_535) throw new AgentError(AgentErrorCode.InvalidInput, `expose port ${e.Port} is out of range`);
      return { protocol: e.Protocol === RunExposeProtocol.UDP ? "UDP" : "TCP", port: e.Port };
    });
    await pool.start({ name, binary, args: req.Args, env: parseEnvs(req.Envs), dir: req.Dir || dirname(req.Path), exposes });
    return create(ProcessStartResponseSchema, { Data: { Value: name } });
  });

  const Wait: grpc.handleServerStreamingCall<ProcessWaitRequest, ProcessWaitResponse> = (call) => {
    const name = call.request.Data?.Value ?? "";
    const message = (options: ProcessWaitResponse["Options"]): ProcessWaitResponse => create(ProcessWaitResponseSchema, { Options: options });
    // Written pre-encoded (grpc-adapter.ts passes bytes through): the chunks are copied once, into the message.
    const output = new OutputBatcher((err, chunks, bytes, written) => {
      if (call.cancelled) return; // a batch gathered before the client went
      call.write(encodeOutput(err, chunks, bytes) as unknown as ProcessWaitResponse, written);
    });
    pool
      .attach(name, {
        stdout: (chunk) => output.add(false, chunk),
        stderr: (chunk) => output.add(true, chunk),
        onDrain: (resume) => output.whenRoom(resume),
        onGone: (stop) => call.once("cancelled", stop),
      })
      .then((code) => {
        if (call.cancelled) return;
        output.flush();
        call.write(message({ case: "ExitCode", value: code }));
        const trailer = new grpc.Metadata();
        trailer.set(EXIT_CODE_METADATA, String(code));
        call.end(trailer);
      })
      .catch((e: unknown) => failStream(call, e));
  };

  const KeepAlive: grpc.handleClientStreamingCall<ProcessKeepAliveRequest, Void> = (call, callback) => {
    let name = "";
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      if (name === "") {
        callback(toServiceError(new AgentError(AgentErrorCode.InvalidInput, "KeepAlive named no process")));
        return;
      }
      // The client is gone or done: the process goes with it.
      pool.release(name).then(
        () => callback(null, create(VoidSchema)),
        (e: unknown) => callback(toServiceError(e)),
      );
    };
    call.on("data", (req: ProcessKeepAliveRequest) => {
      name = req.Data?.Value || name;
    });
    call.on("end", finish);
    call.on("error", finish);
    call.on("cancelled", finish);
    call.on("close", finish);
    log.debug("keepalive stream opened");
  };

  return { Start, Wait, KeepAlive };
}
