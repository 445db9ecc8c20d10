import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import { AgentError, AgentErrorCode, ValidationError } from "../common";
import { failure, printError } from "./errors";

/** What `run` wrote to stderr and the exit code it left; the exit code is reset, so the test runner's stays 0. */
function captured(run: () => unknown): { stderr: string; exitCode: typeof process.exitCode; returned: unknown } {
  const write = process.stderr.write.bind(process.stderr);
  let stderr = "";
  process.stderr.write = (chunk: string | Uint8Array): boolean => {
    stderr += String(chunk);
    return true;
  };
  try {
    const returned = run();
    return { stderr, exitCode: process.exitCode, returned };
  } finally {
    process.stderr.write = write;
  }
}

afterEach(() => {
  process.exitCode = undefined;
});

describe("the command lines' one error style", () => {
  it("prints error: and the message, and sets the exit code it returns", () => {
    assert.deepEqual(
      captured(() => printError("--manager x: expected systemd, windows or pidfile", 2)),
      {
        stderr: "error: --manager x: expected systemd, windows or pidfile\n",
        exitCode: 2,
        returned: 2,
      },
    );
  });

  it("reports a catalog error and an invalid file the same way, exit code 1", () => {
    const plain = captured(() =>
      failure(new AgentError(AgentErrorCode.InvalidInput, "--key k: cannot read it (ENOENT)")),
    );
    assert.deepEqual(plain, { stderr: "error: --key k: cannot read it (ENOENT)\n", exitCode: 1, returned: 1 });
    const invalid = captured(() =>
      failure(
        new ValidationError("stacks/Pulumi.bad.yaml", [
          { path: "fleet.pools[0]", message: "expected an object", severity: "error" },
        ]),
      ),
    );
    assert.match(
      invalid.stderr,
      /^error: stacks\/Pulumi\.bad\.yaml is invalid:\n.*fleet\.pools\[0\].*expected an object\n$/,
    );
    assert.equal(invalid.exitCode, 1);
  });

  it("rethrows what is not a catalog error: a bug is not a failure to report", () => {
    const bug = new TypeError("x is undefined");
    assert.throws(() => captured(() => failure(bug)), bug);
    assert.equal(process.exitCode, undefined);
  });
});
