import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { processName } from "./binary";
import { renderCloseRules, renderOpenRules } from "./firewall";
import { parseListValue, parsePortSpec } from "./list-value";
import { identityCommand, killTreeCommand } from "./process-host.win32";
import { PIPE_SDDL, parseDacl, renderPipeAclCheck } from "./security";
import { ProcessPathPolicy, normaliseHostPath } from "./whitelist";

describe("wins list arguments", () => {
  it("split on spaces outside quotes and keep the quotes, as wins did", () => {
    assert.deepEqual(parseListValue(`up --wins-args='--config=c:\\etc\\config' "a b"`), ["up", "--wins-args='--config=c:\\etc\\config'", '"a b"']);
    assert.deepEqual(parseListValue(""), []);
    assert.deepEqual(parseListValue("  a   b "), ["a", "b"]);
    assert.throws(() => parseListValue("a 'b"), /unpaired escaped quote/);
  });

  it("parse port specs and ranges", () => {
    assert.deepEqual(parsePortSpec("TCP:443"), { protocol: "TCP", ports: [443] });
    assert.deepEqual(parsePortSpec("udp:4789-4790"), { protocol: "UDP", ports: [4789, 4790] });
    assert.throws(() => parsePortSpec("TCP:90-80"), /low port/);
    assert.throws(() => parsePortSpec("SCTP:1"), /protocol/);
    assert.throws(() => parsePortSpec("UDP:53", ["TCP"]), /protocol must be TCP/);
  });
});

describe("process naming", () => {
  it("strips exactly one .exe, not a character set as wins's TrimRight did", () => {
    assert.equal(processName("C:\\etc\\nginx\\nginx.exe"), "rancher-wins-nginx");
    assert.equal(processName("C:\\etc\\rancher\\wins\\wins-upgrade.exe"), "rancher-wins-wins-upgrade");
    assert.equal(processName("/opt/bin/exe.exe.EXE"), "rancher-wins-exe.exe");
    assert.equal(processName("/opt/bin/tool.sh"), "rancher-wins-tool.sh");
  });
});

describe("Windows path rules (as data)", () => {
  it("normalise drive paths and refuse what Windows would reinterpret", () => {
    assert.equal(normaliseHostPath("C:\\etc\\Kubelet.exe", "win32"), "c:/etc/Kubelet.exe");
    for (const bad of ["C:\\etc\\x.exe:stream", "C:\\etc\\CON", "C:\\etc\\nul.txt", "C:\\etc\\COM\u00b9.log", "C:\\etc\\lpt3", "C:\\etc\\x.exe.", "\\\\?\\C:\\x.exe", "etc\\x.exe", "C:\\etc\\..\\x.exe"]) {
      assert.throws(() => normaliseHostPath(bad, "win32"), /invalid path/, bad);
    }
  });

  it("match whitelist entries case-insensitively on Windows", async () => {
    const policy = new ProcessPathPolicy(["C:\\etc\\wins\\wins-upgrade.exe"], false, "win32", () => Promise.resolve({ isSymbolicLink: () => false }));
    await policy.check("c:/ETC/wins/WINS-upgrade.exe");
    await assert.rejects(policy.check("C:\\etc\\wins\\other.exe"), /not in the process whitelist/);
  });
});

describe("rendered Windows commands (as data)", () => {
  it("firewall rules are named <process>-<PROTO>-<port> in the ActiveStore, with names quoted", () => {
    const open = renderOpenRules("rancher-wins-it's", [{ protocol: "TCP", port: 80 }, { protocol: "UDP", port: 4789 }, { protocol: "TCP", port: 0 }]);
    assert.deepEqual(open.split("\n").map((l) => /-Name ('[^']*(?:''[^']*)*')/.exec(l)?.[1]), ["'rancher-wins-it''s-TCP-80'", "'rancher-wins-it''s-UDP-4789'"]);
    assert.match(open, /-PolicyStore ActiveStore/);
    assert.equal(renderCloseRules("rancher-wins-x"), "Get-NetFirewallRule -Name 'rancher-wins-x-*' -PolicyStore ActiveStore -ErrorAction SilentlyContinue | Remove-NetFirewallRule");
  });

  it("tree kill and identity use the system's own tools, with the pid as a number", () => {
    assert.deepEqual(killTreeCommand(42), ["taskkill.exe", "/T", "/F", "/PID", "42"]);
    assert.match(identityCommand(7).at(-1) ?? "", /Get-Process -Id 7 /);
  });

  it("the pipe DACL admits only Administrators and SYSTEM", () => {
    const dacl = parseDacl(PIPE_SDDL);
    assert.equal(dacl.protectedDacl, true);
    assert.deepEqual(dacl.aces, [{ type: "A", rights: "GA", trustee: "BA" }, { type: "A", rights: "GA", trustee: "SY" }]);
    assert.match(renderPipeAclCheck("\\\\.\\pipe\\rancher_wins"), /Get-Acl -LiteralPath '\\\\\.\\pipe\\rancher_wins'/);
  });
});
