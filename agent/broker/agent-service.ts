/**
 * `winfleet.agent.v1.AgentService`, beside the wins services on the broker's
 * socket: `Status` answers what the lifecycle engine reports (the upgrader
 * pods' readiness probe asks it), `ReloadConfig` re-reads the broker config and
 * swaps the whitelist and proxy ports without a restart, keeping the old
 * config when the new one is invalid; `ListProcesses` and `KillProcesses` show
 * and end the host processes it manages, orphans of an earlier broker included.
 */
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { AgentError, AgentErrorCode } from "../common";
import {
  type KillProcessesRequest,
  KillProcessesResponseSchema,
  ListProcessesResponseSchema,
  type ReloadConfigRequest,
  ReloadConfigResponseSchema,
  type StatusResponse,
  StatusResponseSchema,
} from "./generated/winfleet/agent_pb";
import type { ProcessInfo } from "./process-pool";
import { toServiceError } from "./status";

/** What Status reports, as plain data. */
export type AgentStatus = Omit<StatusResponse, "$typeName" | "$unknown" | "Components"> & {
  readonly Components: readonly { readonly Name: string; readonly Version: string; readonly State: string }[];
};

/** What the service needs from the broker and the agent around it. */
export interface AgentServiceHooks {
  /** The lifecycle engine's status; absent when the broker runs alone. */
  readonly status?: () => Promise<AgentStatus>;
  /** Re-reads the config file (the one given, or the broker's own) and applies it. */
  readonly reload: (path: string | undefined) => Promise<{ processPaths: number; proxyPorts: number; sha256: string }>;
  /** SHA-256 of the broker config in use. */
  readonly configSha256: () => string;
  /** The managed processes, orphans included. */
  readonly processes: () => Promise<ProcessInfo[]>;
  /** Ends processes by name and, with `orphans`, every orphan; resolves with the names ended. */
  readonly kill: (names: readonly string[], orphans: boolean) => Promise<string[]>;
}

/** The service implementation. */
export function agentService(hooks: AgentServiceHooks): grpc.UntypedServiceImplementation {
  const Status: grpc.handleUnaryCall<unknown, StatusResponse> = (_call, callback) => {
    if (!hooks.status) {
      callback(
        toServiceError(
          new AgentError(
            AgentErrorCode.Unavailable,
            "this broker runs without the lifecycle engine (winfleet-agent broker, not serve)",
          ),
        ),
      );
      return;
    }
    hooks.status().then(
      (s) =>
        callback(
          null,
          create(StatusResponseSchema, {
            ...s,
            Components: s.Components.map((c) => ({ ...c })),
            BrokerConfigSha256: hooks.configSha256(),
          }),
        ),
      (e: unknown) => callback(toServiceError(e)),
    );
  };
  const ReloadConfig: grpc.handleUnaryCall<ReloadConfigRequest, unknown> = (call, callback) => {
    hooks.reload(call.request.Path || undefined).then(
      (r) =>
        callback(
          null,
          create(ReloadConfigResponseSchema, {
            ProcessPaths: r.processPaths,
            ProxyPorts: r.proxyPorts,
            ConfigSha256: r.sha256,
          }),
        ),
      (e: unknown) => callback(toServiceError(e)),
    );
  };
  const ListProcesses: grpc.handleUnaryCall<unknown, unknown> = (_call, callback) => {
    hooks.processes().then(
      (list) =>
        callback(
          null,
          create(ListProcessesResponseSchema, {
            Processes: list.map((p) => ({
              Name: p.name,
              Pid: p.pid,
              StartedAt: p.startedAt,
              Path: p.path,
              State: p.state,
              ExitCode: p.exitCode ?? -1,
              BrokerPid: p.brokerPid,
            })),
          }),
        ),
      (e: unknown) => callback(toServiceError(e)),
    );
  };
  const KillProcesses: grpc.handleUnaryCall<KillProcessesRequest, unknown> = (call, callback) => {
    const names = call.request.Names;
    if (names.length === 0 && !call.request.Orphans) {
      callback(
        toServiceError(
          new AgentError(AgentErrorCode.InvalidInput, "name the processes to kill, or ask for the orphans"),
        ),
      );
      return;
    }
    hooks.kill(names, call.request.Orphans).then(
      (killed) => callback(null, create(KillProcessesResponseSchema, { Killed: killed })),
      (e: unknown) => callback(toServiceError(e)),
    );
  };
  return { Status, ReloadConfig, ListProcesses, KillProcesses };
}
