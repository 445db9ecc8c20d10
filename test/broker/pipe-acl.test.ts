/**
 * The PowerShell the broker runs on Windows to give its pipes wins's DACL parses as PowerShell
 * (through the grammar the content checks use), for pipe names with quotes too; what it does is
 * agent/broker/security.test.ts's, and only Windows runs it.
 */
import assert from "node:assert/strict";
import { it } from "node:test";
import { renderPipeAclApply } from "../../agent/broker/security";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";

it("the pipe DACL script parses, whatever the pipe's name", async () => {
  for (const pipe of ["\\\\.\\pipe\\rancher_wins", "\\\\.\\pipe\\rancher_wins_proxy", '\\\\.\\pipe\\it\'s "odd" $x']) {
    const script = renderPipeAclApply(pipe);
    assert.deepEqual(await powerShellSyntaxErrors(script), [], script);
  }
});
