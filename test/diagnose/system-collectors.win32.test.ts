import assert from "node:assert/strict";
import { mkdirSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { type DiagnoseContext, runCollectors } from "../../agent/diagnose/collector";
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
} from "../../agent/diagnose/system-collectors.win32";
import { tempDir } from "../support";

describe("the Windows collectors (as data)", () => {
  it("every script parses with zero PowerShell syntax errors, quoted names included", async () => {
    const scripts = {
      services: servicesScript(),
      quoted: servicesScript(["it's"]),
      firewall: firewallScript(),
      processes: hostProcessesScript(),
      reboot: pendingRebootScript(),
      version: hostVersionScript(),
      task: agentTaskScript(),
      quotedTask: agentTaskScript("it's"),
    };
    for (const [name, script] of Object.entries(scripts))
      assert.deepEqual(await powerShellSyntaxErrors(powershell(script)[7] ?? ""), [], name);
    assert.match(servicesScript(["it's"]), /'it''s'/);
  });

  it("leaves command lines out of the host processes (they may carry credentials) and finds them as wins named them", () => {
    const s = hostProcessesScript();
    assert.match(s, /Name LIKE 'rancher-wins-%'/);
    assert.doesNotMatch(s, /CommandLine/);
  });

  it("reads each event log channel over the --since window, newest first", () => {
    const argv = eventLogCommand("System", "Service Control Manager", 3_600_000);
    assert.deepEqual(argv, [
      "wevtutil.exe",
      "qe",
      "System",
      "/q:*[System[Provider[@Name='Service Control Manager'] and TimeCreated[timediff(@SystemTime) <= 3600000]]]",
      "/f:text",
      "/rd:true",
      "/c:5000",
    ]);
    assert.ok(
      EVENT_LOGS.some((e) => e.channel === "Microsoft-Windows-Host-Network-Service-Admin"),
      "HNS",
    );
  });

  it("has collectors for the kubelet, containerd, kube-proxy and CNI logs, HNS, services, firewall and the network", () => {
    const names = windowsCollectors().map((c) => c.name);
    for (const n of [
      "log-kubelet",
      "log-containerd",
      "log-kube-proxy",
      "log-calico",
      "hns-networks",
      "hns-endpoints",
      "services",
      "firewall",
      "ipconfig",
      "routes",
      "eventlog-scm",
      "agent-task",
      "pending-reboot",
    ])
      assert.ok(names.includes(n), n);
    assert.equal(new Set(names).size, names.length, "names are unique");
  });
});

describe("a log directory", () => {
  it("absent is a component this host does not run (not a failure); present, its recent files are collected", async () => {
    const root = tempDir("logdir-");
    mkdirSync(join(root, "var", "log", "kubelet"), { recursive: true });
    writeFileSync(join(root, "var", "log", "kubelet", "kubelet.log"), "E1125 node not ready\n");
    writeFileSync(join(root, "var", "log", "kubelet", "kubelet.old.log"), "old\n");
    utimesSync(join(root, "var", "log", "kubelet", "kubelet.old.log"), new Date(0), new Date(0));
    const collectors = windowsCollectors().filter((c) => c.name === "log-kubelet" || c.name === "log-flannel");
    const ctx: DiagnoseContext = {
      root,
      since: new Date(Date.now() - 3_600_000),
      platform: "win32",
      configFile: undefined,
      config: undefined,
      configError: undefined,
      agentLog: undefined,
      brokerConfigFile: undefined,
      runDir: root,
      run: () => Promise.reject(new Error("no commands")),
    };
    const got = await runCollectors(collectors, ctx, { timeoutMs: 5000 });
    assert.deepEqual([...got.files.keys()], ["logs/kubelet/kubelet.log"]);
    assert.deepEqual(
      got.missing.map((m) => [m.path, m.reason]),
      [["logs/flannel", "not present on this host"]],
    );
  });
});
