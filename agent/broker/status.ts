/**
 * The one place catalog errors become gRPC statuses. Handlers throw
 * {@link AgentError}s; this turns them (and anything unexpected) into a
 * ServiceError with the right code and a message safe to show a client.
 */
import { type ServiceError, status } from "@grpc/grpc-js";
import { Metadata } from "@grpc/grpc-js";
import { AgentError, type AgentErrorCode, errorMessage } from "../common";

const CODES: Record<AgentErrorCode, status> = {
  INVALID_INPUT: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  ALREADY_EXISTS: status.ALREADY_EXISTS,
  PERMISSION_DENIED: status.PERMISSION_DENIED,
  FETCH_FAILED: status.UNAVAILABLE,
  HASH_MISMATCH: status.FAILED_PRECONDITION,
  CONFLICT: status.FAILED_PRECONDITION,
  APPLY_FAILED: status.INTERNAL,
  COMMAND_FAILED: status.INTERNAL,
  UNSUPPORTED: status.UNIMPLEMENTED,
  UNAVAILABLE: status.UNAVAILABLE,
};

/** The gRPC status for a thrown value. */
export function toServiceError(e: unknown): ServiceError {
  const code = e instanceof AgentError ? CODES[e.code] : status.INTERNAL;
  const details = e instanceof AgentError ? e.message : `internal error: ${errorMessage(e)}`;
  return Object.assign(new Error(details), { code, details, metadata: new Metadata() });
}

/**
 * Ends a server stream with an error status. grpc-js sends a stream's status
 * from its `error` handler; `destroy(err)` would tear the stream down first and
 * the client would never hear why.
 */
export function failStream(call: { emit(event: "error", e: ServiceError): boolean }, e: unknown): void {
  call.emit("error", toServiceError(e));
}
