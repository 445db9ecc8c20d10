/**
 * The agent's error catalog. Every failure the agent reports to a person or a
 * client carries one of these codes; the gRPC broker maps them to status codes in
 * one place, the CLIs map them to exit codes.
 */
export const AgentErrorCode = {
  /** Input (a config, a template, metadata) failed validation. */
  InvalidInput: "INVALID_INPUT",
  /** What a request names does not exist. */
  NotFound: "NOT_FOUND",
  /** A request conflicts with something already running. */
  AlreadyExists: "ALREADY_EXISTS",
  /** Not allowed by configuration (a port not in proxyPorts…). */
  PermissionDenied: "PERMISSION_DENIED",
  /** Something the input refers to could not be fetched or read. */
  FetchFailed: "FETCH_FAILED",
  /** A fetched resource did not match its declared hash. */
  HashMismatch: "HASH_MISMATCH",
  /** The target filesystem holds something the config may not replace. */
  Conflict: "CONFLICT",
  /** The host refused a change (permissions, name too long, disk full…). */
  ApplyFailed: "APPLY_FAILED",
  /** A lifecycle command ran and failed. */
  CommandFailed: "COMMAND_FAILED",
  /** A feature this host or build cannot provide. */
  Unsupported: "UNSUPPORTED",
  /** What the request needs is not running here (yet). */
  Unavailable: "UNAVAILABLE",
} as const;

/** One of {@link AgentErrorCode}'s values. */
export type AgentErrorCode = (typeof AgentErrorCode)[keyof typeof AgentErrorCode];

/** One finding about a value, located by the path of that value in its document. */
export interface Issue {
  /** Path of the offending value, e.g. `storage.files[2].contents.verification.hash`; "" is the document itself. */
  readonly path: string;
  readonly message: string;
  readonly severity: "error" | "warning";
}

/** An error that belongs to the catalog. */
export class AgentError extends Error {
  constructor(
    readonly code: AgentErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "AgentError";
  }
}

/** A document failed validation; `issues` holds every error found (not only the first) and any warnings. */
export class ValidationError extends AgentError {
  constructor(
    readonly subject: string,
    readonly issues: readonly Issue[],
  ) {
    super(AgentErrorCode.InvalidInput, `${subject} is invalid:\n${formatIssues(issues)}`);
    this.name = "ValidationError";
  }
}

/** Renders issues one per line: `error at storage.files[0].path: path not absolute`. */
export function formatIssues(issues: readonly Issue[]): string {
  return issues.map((i) => `${i.severity} at ${i.path === "" ? "(root)" : i.path}: ${i.message}`).join("\n");
}

/** A path segment: an object key or an array index. */
export type PathSegment = string | number;

/** Joins segments the way people read them: `a.b[2].c`. */
export function formatPath(segments: readonly PathSegment[]): string {
  let out = "";
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else out += out === "" ? s : `.${s}`;
  }
  return out;
}

/** Narrows an unknown thrown value to a message. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
