/**
 * The host side of the port proxy: each `Open` stream is one TCP connection,
 * tunnelled to `localhost:<port>` on the host if the port is in `proxyPorts`.
 * Backpressure runs both ways; ending either side half-closes the other.
 */
import { connect } from "node:net";
import { create } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { AgentError, AgentErrorCode, errorMessage, type Logger } from "../common";
import { ListPortsResponseSchema, type TunnelFrame, TunnelFrameSchema } from "./generated/winfleet/proxy_pb";
import { failStream } from "./status";

/** `TunnelService` for the allowed ports (read at each connection, so a reloaded config applies at once). */
export function tunnelService(
  ports: () => readonly number[],
  log: Logger,
  host = "localhost",
): grpc.UntypedServiceImplementation {
  const Open = (call: grpc.ServerDuplexStream<TunnelFrame, TunnelFrame>): void => {
    let socket: ReturnType<typeof connect> | undefined;
    const fail = (e: AgentError): void => {
      socket?.destroy();
      failStream(call, e);
    };
    call.on("data", (frame: TunnelFrame) => {
      if (socket === undefined) {
        const allowed = new Set(ports());
        if (frame.Frame.case !== "Open")
          return fail(new AgentError(AgentErrorCode.InvalidInput, "the first frame of a tunnel must be Open"));
        const port = frame.Frame.value.Port;
        if (!allowed.has(port)) {
          const list = allowed.size > 0 ? [...allowed].join(", ") : "none";
          return fail(
            new AgentError(AgentErrorCode.PermissionDenied, `port ${port} is not in proxyPorts (allowed: ${list})`),
          );
        }
        log.debug("tunnel opened", { port, client: frame.Frame.value.Client });
        const s = connect({ port, host, allowHalfOpen: true });
        socket = s;
        s.on("data", (chunk: Buffer) => {
          if (!call.write(create(TunnelFrameSchema, { Frame: { case: "Data", value: chunk } }))) {
            s.pause();
            call.once("drain", () => s.resume());
          }
        });
        s.on("end", () => call.end());
        s.on("error", (e) =>
          fail(
            new AgentError(
              AgentErrorCode.FetchFailed,
              `could not reach localhost:${port} on the host: ${errorMessage(e)}`,
            ),
          ),
        );
        return undefined;
      }
      if (frame.Frame.case === "Data" && !socket.write(frame.Frame.value)) {
        call.pause();
        socket.once("drain", () => call.resume());
      }
      return undefined;
    });
    call.on("end", () => socket?.end());
    call.on("cancelled", () => socket?.destroy());
    call.on("error", () => socket?.destroy());
  };
  const ListPorts: grpc.handleUnaryCall<unknown, unknown> = (_call, callback) => {
    callback(null, create(ListPortsResponseSchema, { Ports: [...new Set(ports())].sort((a, b) => a - b) }));
  };
  return { Open, ListPorts };
}
