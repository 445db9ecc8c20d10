/** How every CLI command reports a catalog error to a person. */
import { AgentError, ValidationError, formatIssues } from "../common";

/** Prints a failure and sets exit code 1; anything else is a bug and is rethrown. */
export function reportFailure(e: unknown): void {
  if (e instanceof ValidationError) process.stderr.write(`${e.subject} is invalid:\n${formatIssues(e.issues)}\n`);
  else if (e instanceof AgentError) process.stderr.write(`error: ${e.message}\n`);
  else throw e;
  process.exitCode = 1;
}
