import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentError } from "./errors";
import {
  STATE_SDDL_LINE,
  STATE_USER_LINE,
  parseSddl,
  renderStateDirSddl,
  stateDirAclArgs,
  stateDirDaclProblem,
  stateDirOwnerProblem,
} from "./state-acl";
import { type RunSync, secureStateDir } from "./state-acl.win32";

const DIR = "C:\\.winfleet";
/** What a directory made under C:\ by SYSTEM has: the drive's DACL, inherited (Users may read and create). */
const INHERITED = "O:SYG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIID;0x1200a9;;;BU)(A;CIID;DC;;;BU)";
/** What icacls leaves: protected, SYSTEM and Administrators only. */
const PRIVATE = "O:SYG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)";

/** A host whose Get-Acl answers with each of `sddls` in turn (the agent running as `user`), recording every run. */
function host(...sddls: (string | undefined)[]): { run: RunSync; calls: string[][] } {
  return hostAs("S-1-5-18", ...sddls);
}

function hostAs(user: string, ...sddls: (string | undefined)[]): { run: RunSync; calls: string[][] } {
  const calls: string[][] = [];
  const run: RunSync = (file, args) => {
    calls.push([file, ...args]);
    if (file !== "powershell.exe") return "";
    const sddl = sddls.shift();
    return sddl === undefined ? "" : `${STATE_SDDL_LINE}${sddl}\r\n${STATE_USER_LINE}${user}\r\n`;
  };
  return { run, calls };
}

describe("the state directory's ACL on Windows (as data)", () => {
  it("icacls gives it a protected DACL for SYSTEM and Administrators alone, by SID, inherited below", () => {
    assert.deepEqual(stateDirAclArgs(DIR), [
      DIR,
      "/inheritance:r",
      "/grant:r",
      "*S-1-5-18:(OI)(CI)F",
      "*S-1-5-32-544:(OI)(CI)F",
      "/q",
    ]);
    assert.equal(
      renderStateDirSddl("C:\\it's\\.winfleet"),
      [
        "$ErrorActionPreference = 'Stop'",
        "'winfleet-state-sddl: ' + (Get-Acl -LiteralPath 'C:\\it''s\\.winfleet').Sddl",
        "'winfleet-state-user: ' + [Security.Principal.WindowsIdentity]::GetCurrent().User.Value",
      ].join("\n"),
    );
  });

  it("reads owners and DACLs out of SDDL, and names what is wrong", () => {
    assert.deepEqual(parseSddl(PRIVATE), {
      owner: "SY",
      protectedDacl: true,
      aces: [
        { type: "A", rights: "FA", trustee: "SY" },
        { type: "A", rights: "FA", trustee: "BA" },
      ],
    });
    assert.equal(stateDirOwnerProblem(PRIVATE), undefined);
    assert.equal(stateDirOwnerProblem("O:BAG:SYD:P(A;;FA;;;SY)"), undefined);
    assert.match(stateDirOwnerProblem("O:S-1-5-21-1-2-3-1001G:SYD:P") ?? "", /owned by S-1-5-21-1-2-3-1001/);
    assert.equal(stateDirDaclProblem(PRIVATE), undefined);
    assert.equal(stateDirDaclProblem(INHERITED), "inherits its DACL");
    assert.equal(stateDirDaclProblem("O:SYD:P(A;OICI;FA;;;SY)(A;OICI;FR;;;BU)"), "allows BU");
    assert.equal(stateDirDaclProblem("O:SYD:P"), "allows nobody");
  });

  it("makes a directory it just made private, and reads the DACL back", () => {
    const h = host(INHERITED, PRIVATE);
    secureStateDir(DIR, true, h.run);
    assert.deepEqual(
      h.calls.map((c) => c[0]),
      ["powershell.exe", "icacls.exe", "powershell.exe"],
    );
    assert.deepEqual(h.calls[1], ["icacls.exe", ...stateDirAclArgs(DIR)]);
  });

  it("leaves a private one as it is, and repairs one of its own that others may reach", () => {
    const kept = host(PRIVATE);
    secureStateDir(DIR, false, kept.run);
    assert.deepEqual(kept.calls.length, 1);
    const repaired = host(INHERITED, PRIVATE);
    secureStateDir(DIR, false, repaired.run);
    assert.equal(repaired.calls[1]?.[0], "icacls.exe");
  });

  it("keeps the agent's own user in when it runs as someone other than SYSTEM, as 0700 does on Linux", () => {
    const me = "S-1-5-21-1-2-3-1001";
    assert.deepEqual(stateDirAclArgs(DIR, me).slice(3), [
      "*S-1-5-18:(OI)(CI)F",
      "*S-1-5-32-544:(OI)(CI)F",
      `*${me}:(OI)(CI)F`,
      "/q",
    ]);
    assert.deepEqual(stateDirAclArgs(DIR, "S-1-5-18"), stateDirAclArgs(DIR));
    const h = hostAs(
      me,
      `O:${me}G:S-1-5-21-1-2-3-513D:AI(A;OICIID;FA;;;${me})`,
      `O:${me}D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;${me})`,
    );
    secureStateDir(DIR, true, h.run);
    assert.deepEqual(h.calls[1], ["icacls.exe", ...stateDirAclArgs(DIR, me)]);
  });

  it("refuses a directory another user made in advance, changing nothing", () => {
    const h = host("O:S-1-5-21-1-2-3-1001G:S-1-5-21-1-2-3-513D:AI(A;OICIID;FA;;;S-1-5-21-1-2-3-1001)");
    assert.throws(
      () => secureStateDir(DIR, false, h.run),
      (e: unknown) => e instanceof AgentError && /C:\\\.winfleet is owned by S-1-5-21-1-2-3-1001/.test(e.message),
    );
    assert.deepEqual(
      h.calls.map((c) => c[0]),
      ["powershell.exe"],
    );
  });

  it("refuses a DACL icacls could not make private, and a failing icacls", () => {
    assert.throws(
      () => secureStateDir(DIR, true, host(INHERITED, INHERITED).run),
      /still inherits its DACL after icacls/,
    );
    const failing: RunSync = (file) => {
      if (file === "icacls.exe") throw new Error("Access is denied.");
      return `${STATE_SDDL_LINE}${INHERITED}\n`;
    };
    assert.throws(() => secureStateDir(DIR, true, failing), /cannot make C:\\\.winfleet private: Access is denied\./);
  });

  it("sets the DACL even when PowerShell prints nothing to check it with (Wine's stub)", () => {
    const h = host(undefined, undefined);
    secureStateDir(DIR, true, h.run);
    assert.deepEqual(
      h.calls.map((c) => c[0]),
      ["powershell.exe", "icacls.exe", "powershell.exe"],
    );
  });
});
