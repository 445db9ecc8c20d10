import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../content/powershell-syntax";
import {
  EVENT_LOGS,
  agentTaskScript,
  eventLogCommand,
  firewallScript,
  hostProcessesScript,
  hostVersionScript,
  pendingRebootScript,
  powershell,
  servicesScript,
  windowsCollectors,
} from "./system-collectors.win32";

describe("the Windows collectors (as data)", () => {
  it("every script parses with zero PowerShell syntax errors, quoted names included", async () => {
    const scripts = { services: servicesScript(), quoted: servicesScript(["it's"]), firewall: firewallScript(), processes: hostProcessesScript(), reboot: pendingRebootScript(), version: hostVersionScript(), task: agentTaskScript(), quotedTask: agentTaskScript("it's") };
    for (const [name, script] of Object.entries(scripts)) assert.deepEqual(await powerShellSyntaxErrors(powershell(script)[7] ?? ""), [], name);
    assert.match(servicesScript(["it's"]), /'it''s'/);
  });

  it("leaves command lines out of the host processes (they may carry credentials) and finds them as wins named them", () => {
    const s = hostProcessesScript();
    assert.match(s, /Name LIKE 'rancher-wins-%'/);
    assert.doesNotMatch(s, /CommandLine/);
  });

  it("reads each event log channel over the --since window, newest first", () => {
    const argv = eventLogCommand("System", "Service Control Manager", 3_600_000);
    assert.deepEqual(argv, ["wevtutil.exe", "qe", "System", "/q:*[System[Provider[@Name='Service Control Manager'] and TimeCreated[timediff(@SystemTime) <= 3600000]]]", "/f:text", "/rd:true", "/c:5000"]);
    assert.ok(EVENT_LOGS.some((e) => e.channel === "Microsoft-Windows-Host-Network-Service-Admin"), "HNS");
  });

  it("has collectors for the kubelet, containerd, kube-proxy and CNI logs, HNS, services, firewall and the network", () => {
    const names = windowsCollectors().map((c) => c.name);
    for (const n of ["log-kubelet", "log-containerd", "log-kube-proxy", "log-calico", "hns-networks", "hns-endpoints", "services", "firewall", "ipconfig", "routes", "eventlog-scm", "agent-task", "pending-reboot"]) assert.ok(names.includes(n), n);
    assert.equal(new Set(names).size, names.length, "names are unique");
  });
});
