import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pipeAclOutcome } from "./pipe-acl.win32";
import {
  PIPE_DACL_LINE,
  PIPE_SDDL,
  parseDacl,
  pipeDaclProblem,
  renderPipeAclApply,
  renderPipeAclCheck,
} from "./security";

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

  it("the broker sets that DACL on its pipe, protected, and prints what the pipe then has", () => {
    const script = renderPipeAclApply("\\\\.\\pipe\\rancher_wins");
    assert.match(script, /^\$pipe = '\\\\\.\\pipe\\rancher_wins'$/m);
    assert.match(script, /RawSecurityDescriptor 'D:P\(A;;GA;;;BA\)\(A;;GA;;;SY\)'$/m);
    // DACL_SECURITY_INFORMATION | PROTECTED_DACL_SECURITY_INFORMATION, on a file object (a pipe's name).
    assert.equal(2147483652, 0x80000004);
    assert.match(script, /SetNamedSecurityInfoW\(\$pipe, 1, \[uint32\]2147483652,/);
    assert.match(script, /if \(\$rc -ne 0\) \{ throw "cannot set the DACL/);
    assert.match(script, /GetNamedSecurityInfoW\(\$pipe, 1, 4,/);
    assert.ok(script.includes(`'${PIPE_DACL_LINE}' + [Runtime.InteropServices.Marshal]::PtrToStringUni($text)`));
    assert.match(renderPipeAclApply("\\\\.\\pipe\\it's"), /^\$pipe = '\\\\\.\\pipe\\it''s'$/m, "quoted as data");
  });

  it("accepts wins's DACL as Windows writes it back, and names what is wrong with any other", () => {
    assert.equal(pipeDaclProblem(PIPE_SDDL), undefined);
    assert.equal(pipeDaclProblem("D:P(A;;FA;;;SY)(A;;FA;;;BA)"), undefined);
    assert.equal(pipeDaclProblem("D:P(A;;FA;;;S-1-5-18)(D;;FA;;;WD)(A;;FA;;;S-1-5-32-544)"), undefined);
    // The default a pipe gets from Node: others may read.
    assert.match(pipeDaclProblem("D:(A;;FA;;;SY)(A;;FA;;;BA)(A;;FR;;;WD)(A;;FR;;;AN)") ?? "", /not protected/);
    assert.match(pipeDaclProblem("D:P(A;;FA;;;SY)(A;;FRFW;;;WD)") ?? "", /also allows WD/);
    assert.match(pipeDaclProblem("D:P(A;;FA;;;SY)(A;;FA;;;S-1-5-21-1-2-3-1001)") ?? "", /S-1-5-21-1-2-3-1001/);
    assert.match(pipeDaclProblem("D:P") ?? "", /allows nobody/);
    assert.match(pipeDaclProblem("O:SYG:SY") ?? "", /not a DACL/);
  });

  it("the broker refuses a pipe whose DACL read back is not wins's, and reports one it could not read back", () => {
    const pipe = "\\\\.\\pipe\\rancher_wins";
    assert.deepEqual(pipeAclOutcome(pipe, `${PIPE_DACL_LINE}D:P(A;;FA;;;BA)(A;;FA;;;SY)\r\n`), {
      dacl: "D:P(A;;FA;;;BA)(A;;FA;;;SY)",
    });
    assert.throws(
      () => pipeAclOutcome(pipe, `${PIPE_DACL_LINE}D:(A;;FA;;;SY)(A;;FR;;;WD)\n`),
      /the pipe \\\\\.\\pipe\\rancher_wins is not private: the DACL is not protected/,
    );
    assert.deepEqual(pipeAclOutcome(pipe, ""), { unconfirmed: `PowerShell printed no DACL for ${pipe}` });
  });
});
