import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { PowerShellSession } from "../../agent/shell/powershell-session";
import { invocationLine, isolatedScript, powerShellInvoker } from "../../agent/shell/powershell-wrapper";
import { PWSH, skipUnlessInstalled, tempDir } from "../support";

const T = 60_000;

describe("the PowerShell runner's own scripts", () => {
  it("parse with zero syntax errors", async () => {
    assert.deepEqual(await powerShellSyntaxErrors(powerShellInvoker()), []);
    assert.deepEqual(await powerShellSyntaxErrors(isolatedScript()), []);
    assert.deepEqual(await powerShellSyntaxErrors(invocationLine("/tmp/winfleet-ps-1/2-ab")), []);
  });

  it("never build a quote into the invocation line", () => {
    assert.throws(() => invocationLine("/tmp/it's"), /holds a quote/);
  });
});

// These run wherever pwsh is on PATH and are skipped, saying so, where it is not.
describe("the PowerShell runner with a real pwsh", { skip: skipUnlessInstalled(PWSH) }, () => {
  let dir: string;
  let ps: PowerShellSession;
  before(() => {
    dir = tempDir("ps-runner-");
    ps = new PowerShellSession({ cwd: dir });
  });
  after(async () => {
    await ps.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps stdout, stderr and the exit code apart", async () => {
    const r = await ps.run({
      command: "Write-Output out\n[Console]::Error.WriteLine('err')\nexit 7",
      env: {},
      timeoutMs: T,
    });
    assert.equal(r.exitCode, 7);
    assert.match(r.stdout.toString(), /^out/);
  });

  it("turns an uncaught error into exit 1 with its error record", async () => {
    const r = await ps.run({ command: "Get-Item -LiteralPath '/does/not/exist'", env: {}, timeoutMs: T });
    assert.equal(r.exitCode, 1);
    assert.equal(r.errorRecords.length, 1);
    assert.match(r.errorRecords[0] ?? "", /ObjectNotFound/);
  });

  it("does not fail a command for a native tool's exit code unless the command exits with it", async () => {
    const handled = await ps.run({ command: "& pwsh -NoProfile -Command 'exit 4'\n'handled'", env: {}, timeoutMs: T });
    assert.equal(handled.exitCode, 0);
    const passed = await ps.run({
      command: "& pwsh -NoProfile -Command 'exit 4'\nexit $LASTEXITCODE",
      env: {},
      timeoutMs: T,
    });
    assert.equal(passed.exitCode, 4);
  });

  it("hands the environment over as values", async () => {
    const marker = join(dir, "pwned");
    for (const value of [`$(New-Item '${marker}')`, `'; New-Item '${marker}'; '`, "a\nb", "ünï", ""]) {
      const r = await ps.run({ command: "[Console]::Out.Write($env:VALUE)", env: { VALUE: value }, timeoutMs: T });
      assert.equal(r.exitCode, 0, r.stderr.toString());
      assert.equal(r.stdout.toString().replace(/\r?\n$/, ""), value);
    }
    assert.equal(existsSync(marker), false);
  });

  it("kills the session's tree on a timeout and starts a new session", async () => {
    const r = await ps.run({ command: "Start-Sleep -Seconds 60", env: {}, timeoutMs: 2000 });
    assert.equal(r.timedOut, true);
    const after = await ps.run({ command: "'fine'", env: {}, timeoutMs: T });
    assert.equal(after.exitCode, 0);
  });

  it("runs isolated commands in a process of their own", async () => {
    const a = await ps.run({ command: "$PID", env: {}, timeoutMs: T });
    const b = await ps.run({ command: "$PID", env: {}, timeoutMs: T, isolated: true });
    assert.notEqual(a.stdout.toString(), b.stdout.toString());
  });
});
