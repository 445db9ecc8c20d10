/** `npm start` (winfleet local up) says plainly what it needs instead of pretending to run. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { findPwsh } from "../../agent/cli/local-commands";

describe("winfleet local up", () => {
  it("exits 1 naming what is missing", () => {
    const r = spawnSync(process.execPath, [join(__dirname, "..", "..", "bin", "winfleet.js"), "local", "up"], { encoding: "utf8" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, findPwsh() ? /lifecycle engine .* is not built yet/ : /PowerShell 7 \(pwsh\) is not installed[\s\S]*dotnet tool install --global PowerShell/);
  });
});
