import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { AGENT_TASK } from "../../components/bootstrap";
import { restartTaskCommand, restartTaskScript } from "../../agent/upgrade/service-manager.win32";

describe("the Windows service manager (as data)", () => {
  it("restarts the scheduled task the bootstrap registers", () => {
    const argv = restartTaskCommand();
    assert.deepEqual(argv.slice(0, 7), ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command"]);
    const script = argv[7] ?? "";
    assert.match(script, new RegExp(`Stop-ScheduledTask -TaskName '${AGENT_TASK}'`));
    assert.match(script, new RegExp(`Start-ScheduledTask -TaskName '${AGENT_TASK}'`));
    assert.ok(script.indexOf("Stop-ScheduledTask") < script.indexOf("Start-ScheduledTask"));
  });

  it("parses with zero PowerShell syntax errors, and quotes the task name", async () => {
    assert.deepEqual(await powerShellSyntaxErrors(restartTaskScript("winfleet-agent")), []);
    assert.deepEqual(await powerShellSyntaxErrors(restartTaskScript("it's")), []);
    assert.match(restartTaskScript("it's"), /-TaskName 'it''s'/);
  });
});
