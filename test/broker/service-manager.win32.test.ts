import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { AGENT_SERVICE } from "../../components/agent-service";
import { restartServiceCommand, restartServiceScript } from "../../agent/upgrade/service-manager.win32";

describe("the Windows service manager (as data)", () => {
  it("restarts the service the bootstrap registers, not a scheduled task", () => {
    const argv = restartServiceCommand();
    assert.deepEqual(argv.slice(0, 7), [
      "powershell.exe",
      "-NoLogo",
      "-NoProfile",
      "-NonInteractive",
      "-ExecutionPolicy",
      "Bypass",
      "-Command",
    ]);
    const script = argv[7] ?? "";
    assert.match(script, new RegExp(`Stop-Service -Name '${AGENT_SERVICE}' -Force`));
    assert.match(script, new RegExp(`Start-Service -Name '${AGENT_SERVICE}'`));
    assert.ok(script.indexOf("Stop-Service") < script.indexOf("Start-Service"));
    assert.doesNotMatch(script, /ScheduledTask/);
  });

  it("parses with zero PowerShell syntax errors, and quotes the service name", async () => {
    assert.deepEqual(await powerShellSyntaxErrors(restartServiceScript("winfleet-agent")), []);
    assert.deepEqual(await powerShellSyntaxErrors(restartServiceScript("it's")), []);
    assert.match(restartServiceScript("it's"), /-Name 'it''s'/);
  });
});
