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
import { AgentError, AgentErrorCode, type Logger } from "../common";
import { AGENT_VERSION } from "../version";
import { prepareBinary, processName } from "./binary";
import type { EnvPolicy } from "./environment";
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
import { OutputBatcher, encodeOutput } from "./output-batcher";
import type { ProcessPool } from "./process-pool";
import { failStream, toServiceError } from "./status";
import type { ProcessPathPolicy } from "./whitelist";
import type { MessageShape } from "@bufbuild/protobuf";

type Void = MessageShape<typeof VoidSchema>;
/** Trailing metadata key carrying the host process's exit code (additive; old clients ignore it). */
export const EXIT_CODE_METADATA = "winfleet-exit-code";

function unary<Req, Res>(work: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    work(call.request).then(
      (res) => callback(null, res),
      (e: unknown) => callback(toServiceError(e)),
    );
  };
}

/** `ApplicationService`: the agent's identity. */
export function applicationService(entryFile: string): grpc.UntypedServiceImplementation {
  return {
    Info: unary(async () => {
      const checksum = createHash("sha1")
        .update(await readFile(entryFile))
        .digest("hex");
      return create(ApplicationInfoResponseSchema, {
        Info: create(ApplicationInfoSchema, {
          Checksum: checksum,
          Version: AGENT_VERSION,
          Commit: process.env.WINFLEET_COMMIT ?? "",
        }),
      });
    }),
  };
}

/** `HostService`: the OS version (the registry on Windows; the kernel release elsewhere). */
export function hostService(
  readVersion: () => Promise<Record<string, string>> = linuxHostVersion,
): grpc.UntypedServiceImplementation {
  return {
    GetVersion: unary(async () =>
      create(HostGetVersionResponseSchema, { Data: create(HostVersionSchema, await readVersion()) }),
    ),
  };
}

function linuxHostVersion(): Promise<Record<string, string>> {
  const [major = "", minor = "", build = ""] = release().split(/[.-]/);
  return Promise.resolve({
    CurrentMajorVersionNumber: major,
    CurrentMinorVersionNumber: minor,
    CurrentBuildNumber: build,
    CurrentBuild: build,
    BuildLabEx: osVersion(),
    ReleaseId: release(),
    UBR: "",
  });
}

/** A service whose every method answers UNIMPLEMENTED with a reason (HNS, routes, networks off Windows). */
export function unavailableService(methods: readonly string[], reason: string): grpc.UntypedServiceImplementation {
  const refuse = (_call: unknown, callback: grpc.sendUnaryData<unknown>): void =>
    callback(toServiceError(new AgentError(AgentErrorCode.Unsupported, reason)));
  return Object.fromEntries(methods.map((m) => [m, refuse]));
}

/** `ProcessService`: Start, Wait, KeepAlive with wins's semantics, fixed where wins was wrong. */
export function processService(
  pool: ProcessPool,
  policy: Pick<ProcessPathPolicy, "check">,
  envPolicy: () => Pick<EnvPolicy, "check">,
  log: Logger,
): grpc.UntypedServiceImplementation {
  const Start = unary<ProcessStartRequest, ProcessStartResponse>(async (req) => {
    await policy.check(req.Path);
    const env = envPolicy().check(req.Envs, req.Path);
    const name = processName(req.Path);
    const exposes: Expose[] = req.Exposes.map((e) => {
      if (e.Port < 0 || e.Port > 65_535)
        throw new AgentError(AgentErrorCode.InvalidInput, `expose port ${e.Port} is out of range`);
      return { protocol: e.Protocol === RunExposeProtocol.UDP ? "UDP" : "TCP", port: e.Port };
    });
    await pool.start({ name, args: req.Args, env, dir: req.Dir || dirname(req.Path), exposes }, () =>
      prepareBinary(req.Path, req.Checksum),
    );
    return create(ProcessStartResponseSchema, { Data: { Value: name } });
  });

  const Wait: grpc.handleServerStreamingCall<ProcessWaitRequest, ProcessWaitResponse> = (call) => {
    const name = call.request.Data?.Value ?? "";
    const message = (options: ProcessWaitResponse["Options"]): ProcessWaitResponse =>
      create(ProcessWaitResponseSchema, { Options: options });
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
