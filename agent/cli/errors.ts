/**
 * How every command reports a failure: `error: <message>` on stderr and a
 * non-zero exit code. An unexpected exception is a bug, not a failure to
 * report: it is rethrown, and the entry point prints it with its stack.
 */
import { AgentError } from "../common";

/** Prints `error: <message>`, sets the process's exit code to `exitCode` and returns it. */
export function printError(message: string, exitCode = 1): number {
  process.stderr.write(`error: ${message}\n`);
  process.exitCode = exitCode;
  return exitCode;
}

/**
 * Reports a catalog error through {@link printError} (a ValidationError's
 * message lists its issues, one per line) and returns exit code 1; anything
 * else is rethrown.
 */
export function failure(e: unknown): number {
  if (e instanceof AgentError) return printError(e.message);
  throw e;
}
