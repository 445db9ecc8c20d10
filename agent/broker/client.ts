/**
 * The container side: a client of the broker built from the same generated code,
 * with wins's `prc run` behaviour (checksum, KeepAlive every 5 minutes, output
 * streamed verbatim) plus what wins lacked: the host process's exit code.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { ApplicationService, type ApplicationInfoResponse } from "./generated/wins/application_pb";
import { HostService, type HostGetVersionResponse } from "./generated/wins/host_pb";
import {
  ProcessService,
  type ProcessStartRequestSchema,
  type ProcessStartResponse,
  type ProcessWaitResponse,
} from "./generated/wins/process_pb";
import {
  AgentService,
  type KillProcessesResponse,
  type ListProcessesResponse,
  type ReloadConfigResponse,
  type StatusResponse,
} from "./generated/winfleet/agent_pb";
import { TunnelService } from "./generated/winfleet/proxy_pb";
import { grpcClientClass } from "./grpc-adapter";

/** How often KeepAlive pings, as wins. */
export const KEEPALIVE_INTERVAL_MS = 5 * 60 * 1000;

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

// The window the broker may fill before this client acknowledges: HTTP/2's default, 64 KiB, makes
// a process's output (prc run) wait on a window update every message or two.
const CLIENT_OPTIONS: grpc.ChannelOptions = { "grpc-node.flow_control_window": 4 * 1024 * 1024 };

function client(service: Parameters<typeof grpcClientClass>[0], socket: string): Client {
  const Ctor = grpcClientClass(service);
  return new Ctor(`unix:${socket}`, grpc.credentials.createInsecure(), CLIENT_OPTIONS) as unknown as Client;
}

function unaryCall<Res>(c: Client, method: string, req: unknown): Promise<Res> {
  return new Promise((resolvePromise, reject) => {
    (c[method] as (r: unknown, cb: (e: grpc.ServiceError | null, r: Res) => void) => void).call(c, req, (e, r) =>
      e ? reject(e) : resolvePromise(r),
    );
  });
}

/** One unary call on a connection of its own. */
async function once<Res>(
  service: Parameters<typeof grpcClientClass>[0],
  socket: string,
  method: string,
  req: unknown,
): Promise<Res> {
  const c = client(service, socket);
  try {
    return await unaryCall<Res>(c, method, req);
  } finally {
    c.close();
  }
}

/** `AgentService.ListProcesses`: the host processes the broker manages, orphans included. */
export function listProcesses(socket: string): Promise<ListProcessesResponse> {
  return once<ListProcessesResponse>(AgentService, socket, "ListProcesses", {});
}

/** `AgentService.KillProcesses`. */
export function killProcesses(
  socket: string,
  names: readonly string[],
  orphans: boolean,
): Promise<KillProcessesResponse> {
  return once<KillProcessesResponse>(AgentService, socket, "KillProcesses", { Names: [...names], Orphans: orphans });
}

/** `ApplicationService.Info`. */
export function appInfo(socket: string): Promise<ApplicationInfoResponse> {
  return once<ApplicationInfoResponse>(ApplicationService, socket, "Info", {});
}

/** `HostService.GetVersion`. */
export function hostVersion(socket: string): Promise<HostGetVersionResponse> {
  return once<HostGetVersionResponse>(HostService, socket, "GetVersion", {});
}

/** `AgentService.Status`: what the agent has applied and is doing. */
export function agentStatus(socket: string): Promise<StatusResponse> {
  return once<StatusResponse>(AgentService, socket, "Status", {});
}

/** `AgentService.ReloadConfig`: the broker re-reads its config (`path`, or its own file). */
export function reloadBrokerConfig(socket: string, path?: string): Promise<ReloadConfigResponse> {
  return once<ReloadConfigResponse>(AgentService, socket, "ReloadConfig", { Path: path ?? "" });
}

/** SHA1 hex of a file, as wins checks binaries. */
export async function sha1File(path: string): Promise<string> {
  return createHash("sha1")
    .update(await readFile(path))
    .digest("hex");
}

/** What `runProcess` writes to. */
export interface RunIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/**
 * A running `prc run`: `done` resolves with the exit code; `stop()` ends the KeepAlive, which kills the host process.
 */
export interface RunningProcess {
  readonly name: string;
  readonly done: Promise<number>;
  stop(): void;
}

/** Starts a host process through the broker and streams its output into `io`. */
export async function runProcess(
  socket: string,
  request: Omit<MessageInitShape<typeof ProcessStartRequestSchema>, "Checksum">,
  io: RunIo,
): Promise<RunningProcess> {
  const path = resolve(request.Path ?? "");
  const checksum = await sha1File(path);
  const c = client(ProcessService, socket);
  const started = await unaryCall<ProcessStartResponse>(c, "Start", {
    ...request,
    Path: path,
    Checksum: checksum,
  }).catch((e: unknown) => {
    c.close();
    throw e;
  });
  const name = started.Data?.Value ?? "";
  const keepAlive = (
    c.KeepAlive as (cb: (e: grpc.ServiceError | null) => void) => grpc.ClientWritableStream<unknown>
  ).call(c, () => undefined);
  const ping = (): boolean => keepAlive.write({ Data: { Value: name } });
  ping();
  const timer = setInterval(ping, KEEPALIVE_INTERVAL_MS);
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    keepAlive.end();
  };
  const wait = (c.Wait as (r: unknown) => grpc.ClientReadableStream<ProcessWaitResponse>).call(c, {
    Data: { Value: name },
  });
  const done = new Promise<number>((resolvePromise, reject) => {
    let exitCode = 0;
    let settled = false;
    const finish = (outcome: () => void): void => {
      stop();
      c.close();
      io.stdout.removeListener("error", outputFailed);
      io.stderr.removeListener("error", outputFailed);
      if (settled) return;
      settled = true;
      outcome();
    };
    // A reader that goes away (`prc run ... | head`) ends the run, host process and all, instead of
    // leaving an unhandled EPIPE to crash the client.
    const outputFailed = (e: Error): void => {
      finish(() => reject(new Error(`cannot write the process's output: ${e.message}`)));
      wait.cancel();
    };
    io.stdout.on("error", outputFailed);
    io.stderr.on("error", outputFailed);
    wait.on("data", (msg: ProcessWaitResponse) => {
      const o = msg.Options;
      const out = o.case === "StdOut" ? io.stdout : o.case === "StdErr" ? io.stderr : undefined;
      if (out && !out.write(o.value as Uint8Array)) {
        wait.pause();
        out.once("drain", () => wait.resume());
      } else if (o.case === "ExitCode") {
        exitCode = o.value;
      }
    });
    wait.on("end", () => finish(() => resolvePromise(exitCode)));
    wait.on("error", (e) => finish(() => reject(e)));
  });
  return { name, done, stop };
}

/** The proxy's allowed ports. */
export async function proxyPorts(socket: string): Promise<number[]> {
  return (await once<{ Ports: number[] }>(TunnelService, socket, "ListPorts", {})).Ports;
}

/** A tunnel stream's frames as the client sees them. */
export type TunnelCall = grpc.ClientDuplexStream<unknown, { Frame: { case?: string; value?: unknown } }>;

/** One connection to the proxy socket; every tunnel is a stream on it. */
export function tunnelClient(socket: string): grpc.Client {
  return client(TunnelService, socket);
}

/** Opens a tunnel stream to `port` on the host. */
export function openTunnel(c: grpc.Client, port: number, clientName: string): TunnelCall {
  const call = ((c as Client).Open as () => TunnelCall).call(c);
  call.write({ Frame: { case: "Open", value: { Port: port, Client: clientName } } });
  return call;
}
