import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { PIPE_SDDL, parseDacl, renderPipeAclCheck } from "./security";

describe("the pipe ACL (as data)", () => {
  it("the pipe DACL admits only Administrators and SYSTEM", () => {
    const dacl = parseDacl(PIPE_SDDL);
    assert.equal(dacl.protectedDacl, true);
    assert.deepEqual(dacl.aces, [
      { type: "A", rights: "GA", trustee: "BA" },
      { type: "A", rights: "GA", trustee: "SY" },
    ]);
    assert.match(renderPipeAclCheck("\\\\.\\pipe\\rancher_wins"), /Get-Acl -LiteralPath '\\\\\.\\pipe\\rancher_wins'/);
  });
});
