/**
 * The agent's Windows service, read from the rendered PowerShell's parse tree:
 * registered once with the SCM's failure actions and failure flag, delayed
 * automatic start and rotated output; re-registration converges (every change
 * behind a comparison, the agent restarted only when something changed); the
 * scheduled-task watchdog gone; the Pester copy equal to the render.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type ScriptFacts, scriptFacts } from "../../agent/content/powershell-facts";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { scCommands } from "../../agent/upgrade/service-manager.win32";
import {
  AGENT_FAILURE_ACTIONS,
  AGENT_NSSM,
  AGENT_SERVICE,
  agentServiceFunction,
  agentServiceRegistration,
  renderServiceRegistrationScript,
} from "../../components/agent-service";
import { type BootstrapArgs, renderBootstrap } from "../../components/bootstrap";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";

const args: BootstrapArgs = {
  node: DEFAULT_NODE_RUNTIME,
  agent: { url: "https://sa.blob.core.windows.net/winfleet/agent-0.2.0.tgz", sha256: "a".repeat(64), version: "0.2.0" },
  content: {
    kind: "url",
    url: "https://sa.blob.core.windows.net/winfleet/content.tgz",
    sha256: "c".repeat(64),
    auth: "none",
  },
  agentConfig: { template: "win2022", templateVersion: "1.0.0" },
  secretVariables: ["KUBE_BOOTSTRAP_TOKEN"],
};
const count = (s: string, needle: string): number => s.split(needle).length - 1;
const named = (f: ScriptFacts, name: RegExp): ScriptFacts["commands"] => f.commands.filter((c) => name.test(c.name));

describe("the agent service in the rendered bootstrap", () => {
  const s = renderBootstrap(args);

  it("registers the service once, with the failure actions and the failure flag exactly once", async () => {
    const f = await scriptFacts(s);
    assert.deepEqual(f.syntaxErrors, []);
    assert.equal(count(s, "function Register-WinfleetAgentService {"), 1);
    const calls = named(f, /^Register-WinfleetAgentService$/);
    assert.equal(calls.length, 1, "registered once");
    assert.deepEqual(calls[0]?.args.find((a) => a.parameter === "name")?.strings, [AGENT_SERVICE]);
    assert.equal(count(s, AGENT_FAILURE_ACTIONS), 1);
    assert.equal(AGENT_FAILURE_ACTIONS, "restart/5000/restart/10000/restart/30000");
    const sc = f.commands.filter((c) => c.operator === "&" && c.name === "$sc");
    const verbs = sc.map((c) =>
      c.args
        .map((a) => a.strings.join(""))
        .filter((x) => x !== "")
        .join(" "),
    );
    assert.deepEqual(
      verbs.sort(),
      ["config start= delayed-auto", `failure reset= 86400 actions= ${AGENT_FAILURE_ACTIONS}`, "failureflag 1"].sort(),
    );
    assert.ok(sc.every((c) => c.inFunction === "Register-WinfleetAgentService"));
  });

  it("hosts Node.js under the pinned NSSM, with NSSM exiting (not restarting) so the SCM is the one supervisor", async () => {
    assert.ok(s.includes(`Get-Pinned -Url '${AGENT_NSSM.url}' -ExpectedHash '${AGENT_NSSM.sha256.toUpperCase()}'`));
    const pinned = JSON.parse(
      readFileSync(
        join(
          __dirname,
          "..",
          "..",
          "content",
          "components",
          "winfleet-common",
          "1.0.0",
          "files",
          "k",
          "winfleet",
          "common",
          "artifacts.json",
        ),
        "utf8",
      ),
    ) as { artifacts: { name: string; url: string; sha256: string }[] };
    assert.deepEqual(
      pinned.artifacts.find((a) => a.name === "nssm"),
      { ...pinned.artifacts.find((a) => a.name === "nssm"), url: AGENT_NSSM.url, sha256: AGENT_NSSM.sha256 },
      "the NSSM the content pins",
    );
    const f = await scriptFacts(s);
    const settings = f.assignments.find(
      (a) => a.variable === "settings" && a.inFunction === "Register-WinfleetAgentService",
    );
    const text = settings?.valueText ?? "";
    for (const [name, value] of [
      ["AppExit", "'Exit'"],
      ["AppRotateFiles", "1"],
      ["AppRotateOnline", "1"],
      ["AppRotateBytes", "10485760"],
      ["AppKillProcessTree", "0"],
      ["AppStdout", "$LogFile"],
      ["AppStderr", "$LogFile"],
      ["Application", "$Node"],
    ] as const) {
      assert.match(
        text,
        new RegExp(
          `${name === "AppExit" ? "AppExit\"; Name = '\\(default\\)'" : `Name = '${name}'`}; Value = ${value.replace(/\$/g, "\\$")};`,
        ),
        name,
      );
    }
    assert.doesNotMatch(text, /'Restart'/);
    assert.match(
      s,
      // Node starts with the agent's heap options (docs/performance.md), before the entry.
      /\$agentArguments = '--initial-old-space-size=64 "' \+ "\$current\\bin\\winfleet-agent\.js" \+ '" serve --config "' \+ \$configPath \+ '"'/,
    );
    // Beside the config (C:\ProgramData\winfleet\agent.json), where winfleet-agent diagnose reads the agent's log.
    assert.match(s, /-Directory \$root -LogFile "\$root\\agent\.log"\n/);
    assert.ok(
      named(f, /^New-Service$/).some((c) =>
        c.args.some((a) => a.parameter === "startuptype" && a.text === "Automatic"),
      ),
    );
  });

  it("no longer keeps the agent alive with a scheduled task, and takes an earlier bootstrap's task off it", async () => {
    const f = await scriptFacts(s);
    assert.deepEqual(named(f, /^(Register-ScheduledTask|New-ScheduledTaskTrigger|Start-ScheduledTask)$/), []);
    const unregister = named(f, /^Unregister-ScheduledTask$/);
    assert.equal(unregister.length, 1);
    assert.ok(
      (unregister[0]?.line ?? Infinity) < (named(f, /^Register-WinfleetAgentService$/)[0]?.line ?? 0),
      "before the service is registered",
    );
    assert.match(unregister[0]?.statementText ?? "", /-TaskName 'winfleet-agent' -Confirm:\$false/);
  });

  it("changes only what differs on a re-run: each change sits behind a comparison, and the agent restarts only on a change", async () => {
    const fn = agentServiceFunction();
    // The service is created only when absent, changed only when it differs.
    assert.match(fn, /if \(\$null -eq \$service\) \{\n\s+New-Service /);
    assert.match(
      fn,
      /elseif \(\$service\.PathName -ne \$binary -or \$service\.StartMode -ne 'Auto' -or \$service\.DisplayName -ne \$displayName\) \{\n[^\n]*\n\s+\$result = Invoke-CimMethod /,
    );
    assert.match(
      fn,
      /if \(\(Get-Item -LiteralPath \$key\)\.GetValue\('DelayedAutostart', 0\) -ne 1\) \{\n\s+\$null = & \$sc 'config'/,
    );
    assert.match(
      fn,
      /if \(\$null -eq \$have -or \[string\]\$item\.GetValueKind\(\$valueName\) -ne \$setting\.Type -or \[string\]\$have -cne \[string\]\$setting\.Value\) \{\n\s+New-ItemProperty /,
    );
    // Every "changed" is set next to the change it reports, and the function starts nothing.
    const f = await scriptFacts(fn);
    assert.equal(count(fn, "$changed = $true"), 4);
    assert.deepEqual(named(f, /^(Start-Service|Restart-Service|Stop-Service|Remove-Item|Remove-ItemProperty)$/), []);
    const reg = agentServiceRegistration();
    assert.match(
      reg,
      /if \(\(\$changed -or \$agentMoved -or \$registered\) -and \(Get-Service -Name 'winfleet-agent'\)\.Status -ne 'Stopped'\) \{\n\s+Restart-Service -Name 'winfleet-agent' -Force\n\}/,
    );
    assert.match(
      reg,
      /if \(\(Get-Service -Name 'winfleet-agent'\)\.Status -ne 'Running'\) \{\n\s+Start-Service -Name 'winfleet-agent'\n\}/,
    );
    // The bootstrap's $agentMoved: the current junction made (a node that runs an agent keeps it: the upgrader
    // moves it).
    assert.match(s, /\$agentMoved = \$false\n# A node that runs an agent keeps it/);
    assert.match(
      s,
      /New-Item -ItemType Junction -Path \$current -Target "\$root\\releases\\\$agentVersion" \| Out-Null\n\s+\$agentMoved = \$true/,
    );
  });

  it("keeps the service through an upgrade: the service runs the current junction, which an upgrade moves", () => {
    assert.match(agentServiceRegistration(), /"\$current\\bin\\winfleet-agent\.js"/);
    assert.doesNotMatch(agentServiceRegistration(), /releases\\/);
    // The agent's own upgrade restarts the same service through the SCM.
    assert.deepEqual(scCommands(AGENT_SERVICE).stop, ["stop", "winfleet-agent"]);
  });
});

describe("a release's service registration and the Pester copy", () => {
  it("the release's register-winfleet-agent.ps1 registers the same service and parses", async () => {
    const script = renderServiceRegistrationScript(DEFAULT_NODE_RUNTIME.exe, "C:\\ProgramData\\winfleet");
    assert.ok(script.includes(agentServiceRegistration()));
    assert.match(
      script,
      /\$nssm = if \(\$NssmPath\) \{ \$NssmPath \} else \{ "\$InstallDir\\nssm\\727d1e42275c\\nssm-2\.24\\win64\\nssm\.exe" \}/,
    );
    assert.deepEqual(await powerShellSyntaxErrors(script), []);
  });

  it("test/windows/AgentService.ps1, which the Windows workflow's Pester tests run, is the rendered function", () => {
    const copy = readFileSync(join(__dirname, "..", "windows", "AgentService.ps1"), "utf8");
    const body = copy.replace(/^(#[^\n]*\n)+/, "");
    assert.equal(
      body,
      agentServiceFunction(),
      "copy agentServiceFunction()'s output (after the header comment) into test/windows/AgentService.ps1",
    );
    const pester = readFileSync(join(__dirname, "..", "windows", "WinfleetCommon.Tests.ps1"), "utf8");
    assert.match(pester, /\. \(Join-Path \$PSScriptRoot 'AgentService\.ps1'\)/);
    assert.match(
      pester,
      /Register-WinfleetAgentService @registration \| Should -BeTrue\n\s+Register-WinfleetAgentService @registration \| Should -BeFalse/,
    );
    assert.match(pester, /Stop-Process -Id \$first -Force/);
  });
});
