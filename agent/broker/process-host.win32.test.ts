import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { identityCommand, killTreeCommand } from "./process-host.win32";

describe("rendered Windows process commands (as data)", () => {
  it("tree kill and identity use the system's own tools, with the pid as a number", () => {
    assert.deepEqual(killTreeCommand(42), ["taskkill.exe", "/T", "/F", "/PID", "42"]);
    assert.match(identityCommand(7).at(-1) ?? "", /Get-Process -Id 7 /);
  });
});
