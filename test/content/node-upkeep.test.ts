/**
 * What the content does for a node beyond starting it, read from the scripts'
 * parse trees: the Windows build refused below the CNI's floor, Defender
 * exclusions where each template's runtime keeps its state, logs that rotate
 * and are deleted past their retention, uninstalls that remove the pods before
 * their networks and cannot stop half-way, and maxPods bounded by the IPAM
 * block. The Pester tests (test/windows) run the helpers themselves on Windows.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { stringsOfVariable } from "../../agent/content/analysis";
import { argumentFor, argumentNames, evaluatePath } from "../../agent/content/host-effects";
import type { ScriptFacts } from "../../agent/content/powershell-facts";
import { CONTENT, shippedContent } from "./shipped";

const shipped = shippedContent();
const facts = (name: string, leaf: string): ScriptFacts => shipped.script(shipped.component(name), leaf).facts;
const lines = (f: ScriptFacts, re: RegExp): number[] => f.commands.filter((c) => re.test(c.name)).map((c) => c.line);
const source = (...path: string[]): string => readFileSync(join(CONTENT, "components", ...path), "utf8");

describe("the Windows build", () => {
  it("prereqs refuses a build below the CNI's floor before it changes anything, naming both builds", () => {
    const f = facts("prereqs", "install.ps1");
    const floor = Math.min(...lines(f, /^Test-WinfleetOsBuildFloor$/));
    for (const change of [/^Enable-WinfleetFeature$/, /^Add-WinfleetDefenderExclusion$/, /^Set-WinfleetFirewallRule$/])
      assert.ok(floor < Math.min(...lines(f, change)), String(change));
    assert.ok(f.emissions.some((e) => e.kind === "throw" && e.variables.includes("floor")));
    const boot = facts("winfleet-common", "Boot.ps1");
    const floors = boot.assignments.find((a) => a.variable === "osbuildfloors");
    assert.deepEqual(floors?.literal, { "17763": 1432, "20348": 169 }, "Calico's Windows requirements");
    assert.match(
      source("winfleet-common", "1.1.0", "files", "k", "winfleet", "common", "lib", "Boot.ps1"),
      /this host runs Windows build \$Build\.\$Revision; the node's CNI \(Calico\) needs \$Build\.\$\(\$script:OsBuildFloors\[\$Build\]\) or later/,
    );
  });
});

describe("Defender exclusions", () => {
  it("follow the template's runtime: RKE2's state under var\\lib\\rancher\\rke2, containerd's own otherwise", () => {
    const rke2 = shipped.content.templates.find((t) => t.name === "rke2-windows");
    assert.equal(rke2?.variables.PREREQS_RUNTIME, "rke2");
    const f = facts("prereqs", "install.ps1");
    const adds = f.commands.filter((c) => /^Add-WinfleetDefenderExclusion$/i.test(c.name));
    assert.equal(adds.length, 2);
    const [rke2Add, containerdAdd] = adds.map((c) => c.args.flatMap((a) => a.strings));
    assert.ok(rke2Add?.includes("var\\lib\\rancher\\rke2") && !rke2Add.includes("ProgramData\\containerd"));
    assert.ok(containerdAdd?.includes("ProgramData\\containerd"));
    const removed = facts("prereqs", "uninstall.ps1")
      .commands.filter((c) => /^Remove-WinfleetDefenderExclusion$/i.test(c.name))
      .flatMap((c) => c.args.flatMap((a) => a.strings));
    for (const p of [...(rke2Add ?? []), ...(containerdAdd ?? [])])
      assert.ok(removed.includes(p), `uninstall removes ${p}`);
  });
});

describe("logs", () => {
  it("containerd logs through NSSM's rotation, not a file it opens and never rotates", () => {
    const f = facts("containerd", "install.ps1");
    assert.equal(lines(f, /^Set-WinfleetService$/).length, 0);
    const hosted = f.commands.find((c) => /^Set-WinfleetHostedService$/i.test(c.name));
    assert.ok(hosted?.args.some((a) => a.parameter === "logfile"));
    if (!hosted) return;
    assert.ok(!hosted.args.some((a) => a.strings.some((s) => s.includes("--log-file"))));
    assert.ok(!f.assignments.some((a) => a.strings.some((s) => s.includes("--log-file"))));
  });

  it("every node service logs where its log rotates: under NSSM into var\\log, or to no file it opens itself", () => {
    // A program's own log file (klog's -log_file, containerd's --log-file) is never rotated, so the
    // retention task, which deletes only rotated logs, cannot bound it.
    const OWN_LOG_FILE = /(^|[\s"'])--?log[-_.]?(file|dir)\b/i;
    const hosted: string[] = [];
    // winfleet-common only defines the helpers; it registers no service of its own.
    for (const c of shipped.content.components.filter((x) => x.metadata.name !== "winfleet-common")) {
      for (const s of c.scripts) {
        for (const call of s.facts.commands) {
          const at = `${s.where}:${call.line}`;
          const strings = (parameter: string): string[] => {
            const arg = argumentFor(call, parameter);
            return arg ? [...arg.strings, ...arg.variables.flatMap((v) => stringsOfVariable(s.facts, v))] : [];
          };
          if (/^Set-WinfleetHostedService$/i.test(call.name)) {
            const log = argumentFor(call, "logfile");
            assert.match((log && evaluatePath(s.facts, log)) ?? "", /^\/var\/log\/[^/]+\/[^/]+\.log$/, `${at} LogFile`);
            assert.ok(!strings("arguments").some((x) => OWN_LOG_FILE.test(x)), `${at} opens a log file of its own`);
            hosted.push(argumentNames(s.facts, argumentFor(call, "name"))[0] ?? at);
          } else if (/^Set-WinfleetService$/i.test(call.name)) {
            assert.ok(!strings("binarypath").some((x) => OWN_LOG_FILE.test(x)), `${at} opens a log file of its own`);
          }
        }
      }
    }
    assert.deepEqual(hosted.sort(), ["containerd", "csi-proxy", "kubelet", "winfleet-kube-proxy"]);
    // Where the retention task looks: var\log and everything under it.
    const retention = facts("prereqs", "log-retention.ps1");
    const sweep = retention.commands.find((x) => /^Remove-WinfleetOldLogs$/i.test(x.name));
    const directory = sweep && argumentFor(sweep, "directory");
    assert.ok(directory, "log-retention.ps1 sweeps a directory");
    // (The task finds the content root from its own location, so the path is the literal under $root.)
    assert.deepEqual(directory.strings, ["var\\log"]);
    assert.deepEqual(directory.variables, ["root"]);
  });

  it("a daily task deletes rotated logs past their age and count", () => {
    const f = facts("prereqs", "install.ps1");
    const task = f.commands.find((c) => /^Set-WinfleetScheduledTask$/i.test(c.name));
    assert.ok(task?.args.some((a) => a.strings.some((s) => s.endsWith("log-retention.ps1"))));
    assert.ok(task?.args.some((a) => a.parameter === "dailyat"));
    assert.ok(lines(facts("prereqs", "log-retention.ps1"), /^Remove-WinfleetOldLogs$/).length === 1);
    assert.ok(lines(facts("prereqs", "uninstall.ps1"), /^Remove-WinfleetScheduledTask$/).length === 1);
    const vars = shipped.component("prereqs").metadata.variables ?? {};
    assert.equal(vars.LOG_RETENTION_DAYS?.default, "7");
    assert.equal(vars.LOG_RETENTION_FILES?.default, "10");
  });
});

describe("uninstalls", () => {
  it("join-kubeadm stops the kubelet, then deletes the pods' tasks and containers before Calico removes the networks", () => {
    const f = facts("join-kubeadm", "uninstall.ps1");
    const stop = Math.max(...lines(f, /^Stop-WinfleetService$/));
    const ctr = f.commands.filter(
      (c) => /^Invoke-WinfleetNative$/i.test(c.name) && c.args.some((a) => a.strings.includes("k8s.io")),
    );
    const verbs = ctr.map((c) => c.args.flatMap((a) => a.strings).filter((s) => ["list", "delete"].includes(s)));
    assert.deepEqual(verbs, [["list"], ["delete"], ["list"], ["delete"]]);
    assert.ok(ctr.every((c) => c.line > stop));
    const order = (name: string): number => shipped.component(name).metadata.uninstall.priority;
    assert.ok(order("join-kubeadm") < order("calico") && order("calico") < order("containerd"));
  });

  it("join-rke2 runs RKE2's uninstall as a child PowerShell whose exit code is read", () => {
    const f = facts("join-rke2", "uninstall.ps1");
    assert.ok(
      !f.commands.some((c) => c.operator === "&" && c.name === "$uninstaller"),
      "not in the calling PowerShell",
    );
    const child = f.commands.find((c) => /^Invoke-WinfleetNative$/i.test(c.name));
    assert.ok(child?.args.some((a) => a.strings.includes("-Command")));
  });
});

describe("pods per node", () => {
  it("maxPods defaults to 60 and is refused past the IPAM block's size less 4", () => {
    const vars = shipped.component("kubelet").metadata.variables ?? {};
    assert.equal(vars.KUBELET_MAX_PODS?.default, "60");
    assert.equal(vars.CALICO_IPAM_BLOCK_SIZE?.default, "26");
    assert.match(
      source("kubelet", "1.34.7-1", "files", "k", "winfleet", "kubelet", "install.ps1"),
      /\$podsPerBlock = \[int\]\[Math\]::Pow\(2, 32 - \$blockSize\) - 4\s+if \(\$maxPods -lt 1 -or \$maxPods -gt \$podsPerBlock\) \{\s+throw/,
    );
  });
});
