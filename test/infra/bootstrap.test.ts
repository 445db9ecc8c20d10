import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { scriptFacts } from "../../agent/content/powershell-facts";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { agentConfigSchema } from "../../agent/service/config";
import {
  ACCESS_RETRY_MINUTES,
  TARGET_LINE,
  bootstrapEpoch,
  bootstrapHash,
  renderBootstrap,
  type BootstrapArgs,
} from "../../components/bootstrap";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";

const blob = {
  kind: "url",
  url: "https://sa.blob.core.windows.net/winfleet/content.tgz",
  sha256: "c".repeat(64),
  auth: "none",
} as const;
const args: BootstrapArgs = {
  node: DEFAULT_NODE_RUNTIME,
  agent: { url: "https://sa.blob.core.windows.net/winfleet/agent-0.2.0.tgz", sha256: "a".repeat(64), version: "0.2.0" },
  content: blob,
  agentConfig: {
    template: "sandbox",
    templateVersion: "1.0.0",
    variables: { KUBE_API_SERVER: "https://10.0.0.4:6443" },
  },
  secretVariables: ["KUBE_BOOTSTRAP_TOKEN", "CALICO_KUBECONFIG"],
};

/** The target line's JSON. */
function targetOf(script: string): { agent: unknown; content: unknown; template?: string; templateVersion?: string } {
  const line = new RegExp(TARGET_LINE.pattern, "m").exec(script)?.[0] ?? "";
  return JSON.parse(/'(.*)'/.exec(line)?.[1]?.replace(/''/g, "'") ?? "{}") as ReturnType<typeof targetOf>;
}

describe("bootstrap", () => {
  it("parses with zero PowerShell syntax errors, in every content mode", async () => {
    for (const content of [
      blob,
      { ...blob, auth: "managedIdentity" as const },
      { ...blob, auth: "sas" as const },
      { kind: "file" as const, path: "C:\\ProgramData\\winfleet\\upload\\content.tgz", sha256: "d".repeat(64) },
    ]) {
      assert.deepEqual(await powerShellSyntaxErrors(renderBootstrap({ ...args, content })), []);
    }
  });

  it("is deterministic and its hash follows its content (its epoch, what it does)", () => {
    assert.equal(renderBootstrap(args), renderBootstrap({ ...args }));
    assert.notEqual(
      bootstrapHash(renderBootstrap(args)),
      bootstrapHash(renderBootstrap({ ...args, agent: { ...args.agent, version: "0.2.1" } })),
    );
  });

  it("verifies the Node runtime, the agent and the content by SHA-256 before using them", () => {
    const s = renderBootstrap(args);
    assert.ok(
      s.includes(`-Url '${DEFAULT_NODE_RUNTIME.url}' -ExpectedHash '${DEFAULT_NODE_RUNTIME.sha256.toUpperCase()}'`),
    );
    // The agent's and the content's URL and digest are the target line's.
    const target = targetOf(s);
    assert.deepEqual(target.agent, { url: args.agent.url, sha256: args.agent.sha256, version: "0.2.0" });
    assert.deepEqual(target.content, { url: blob.url, sha256: blob.sha256 });
    assert.match(
      s,
      /Get-Pinned -Url \$winfleetTarget\.agent\.url -ExpectedHash \$winfleetTarget\.agent\.sha256\.ToUpperInvariant\(\)/,
    );
    assert.match(
      s,
      /Get-Pinned -Url \$winfleetTarget\.content\.url -ExpectedHash \$contentHash -Path \$contentArchive/,
    );
    assert.match(s, /throw "SHA-256 of \$shown is \$actual, expected \$ExpectedHash"/);
    const copied = renderBootstrap({
      ...args,
      content: { kind: "file", path: "C:\\up\\content.tgz", sha256: "d".repeat(64) },
    });
    assert.deepEqual(targetOf(copied).content, { path: "C:\\up\\content.tgz", sha256: "d".repeat(64) });
    assert.match(copied, /Assert-Pinned -Path \$winfleetTarget\.content\.path -ExpectedHash \$contentHash/);
  });

  it("reads blobs with the managed identity, or with a SAS passed as an argument", () => {
    assert.match(
      renderBootstrap({ ...args, content: { ...blob, auth: "managedIdentity" } }),
      /-Path \$contentArchive -Headers \(Get-StorageHeaders\)/,
    );
    const sas = renderBootstrap({ ...args, content: { ...blob, auth: "sas" } });
    assert.match(sas, /Get-Pinned -Url \(\$winfleetTarget\.content\.url \+ '\?' \+ \$ContentSas/);
  });

  it("asks IMDS for the named identity's token, and reads the agent bundle with it when told to", async () => {
    const id =
      "/subscriptions/0000/resourceGroups/rg-x/providers/Microsoft.ManagedIdentity/userAssignedIdentities/winfleet-win-nodes";
    const s = renderBootstrap({
      ...args,
      content: { ...blob, auth: "managedIdentity" },
      identity: id,
      agent: { ...args.agent, auth: "managedIdentity" },
    });
    assert.ok(
      s.includes(
        `resource=https%3A%2F%2Fstorage.azure.com%2F&msi_res_id=%2Fsubscriptions%2F0000%2FresourceGroups%2Frg-x%2Fproviders%2FMicrosoft.ManagedIdentity%2FuserAssignedIdentities%2Fwinfleet-win-nodes'`,
      ),
    );
    assert.match(s, /Get-Pinned -Url \$winfleetTarget\.agent\.url [^\n]* -Headers \(Get-StorageHeaders\)\n/);
    assert.deepEqual(await powerShellSyntaxErrors(s), []);
    const plain = renderBootstrap(args);
    assert.doesNotMatch(plain, /msi_res_id/);
    assert.match(plain, /-Path \$agentArchive\n/, "a bundle elsewhere is read without a token");
  });

  describe("the one gate: only the upgrader moves a node's versions", () => {
    const bumps: [string, BootstrapArgs][] = [
      ["an agent version", { ...args, agent: { ...args.agent, version: "0.3.0", url: "https://x/agent-0.3.0.tgz" } }],
      ["a template version", { ...args, agentConfig: { ...args.agentConfig, templateVersion: "1.1.0" } }],
      ["new content", { ...args, content: { ...blob, sha256: "e".repeat(64) } }],
      ["a secret variable more", { ...args }],
    ];
    for (const [what, bumped] of bumps.slice(0, 3))
      it(`${what} changes the target line alone: the epoch stays`, () => {
        const a = renderBootstrap(args);
        const b = renderBootstrap(bumped);
        assert.notEqual(a, b);
        assert.equal(bootstrapEpoch(a), bootstrapEpoch(b));
        const differing = b.split("\n").filter((l, i) => l !== a.split("\n")[i]);
        assert.equal(differing.length, 1);
        assert.match(differing[0] ?? "", new RegExp(TARGET_LINE.pattern));
      });

    it("what the bootstrap does (a label, the runtime, the secrets it needs) changes the epoch", () => {
      const e = bootstrapEpoch(renderBootstrap(args));
      for (const changed of [
        { ...args, agentConfig: { ...args.agentConfig, variables: { KUBE_NODE_LABELS: "a=b" } } },
        { ...args, node: { ...DEFAULT_NODE_RUNTIME, sha256: "f".repeat(64) } },
        { ...args, secretVariables: ["KUBE_BOOTSTRAP_TOKEN"] },
      ])
        assert.notEqual(bootstrapEpoch(renderBootstrap(changed)), e);
    });

    it("keeps a running node's agent and the template and content its config names", () => {
      const s = renderBootstrap(args);
      assert.match(
        s,
        /if \(-not \(Test-Path -LiteralPath \$current\)\) \{\n {4}\$agentVersion = \$winfleetTarget\.agent\.version/,
      );
      assert.doesNotMatch(s, /\.Delete\(\)/, "never moves the current junction");
      assert.match(
        s,
        /if \(\$kept -and \$kept\.content -and \$kept\.templateVersion -and \(Test-Path -LiteralPath \$kept\.content\)\) \{\n {4}\$template = \$kept\.template/,
      );
    });
  });

  it("takes the secret variables as one JSON argument or line on stdin, holds no secret, and refuses to run without one", () => {
    const s = renderBootstrap(args);
    assert.match(s, /\[string\]\$Secrets,\n {4}\[switch\]\$SecretsFromStdin/);
    assert.match(s, /if \(\$SecretsFromStdin\) \{ \$Secrets = \[Console\]::In\.ReadLine\(\) \}/);
    assert.match(
      s,
      /foreach \(\$name in @\('CALICO_KUBECONFIG', 'KUBE_BOOTSTRAP_TOKEN'\)\) \{\n {4}if \(-not \$secretValues\.\$name\) \{ throw/,
    );
    assert.match(s, /\$config \| Add-Member -NotePropertyName secrets -NotePropertyValue \$secretValues -Force/);
    assert.doesNotMatch(s, /password/i);
    assert.throws(() => renderBootstrap({ ...args, secretVariables: [] }), /join token/);
  });

  it("writes an agent config the agent accepts", () => {
    const s = renderBootstrap(args);
    const json = /\$config = '(.*)' \| ConvertFrom-Json/s.exec(s)?.[1]?.replace(/''/g, "'") ?? "";
    const config = {
      ...(JSON.parse(json) as Record<string, unknown>),
      content: "C:\\ProgramData\\winfleet\\content\\cccccccccccc",
      secrets: { KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef" },
    };
    assert.equal(
      agentConfigSchema.safeParse(config).success,
      true,
      JSON.stringify(agentConfigSchema.safeParse(config).error?.issues),
    );
  });

  it("quotes values so a quote in them cannot end the string", () => {
    const s = renderBootstrap({ ...args, agentConfig: { note: "it's" } });
    assert.match(s, /'\{\n {2}"note": "it''s"\n\}'/);
  });

  it("retries a refused read (401, 403) for 20 minutes, as long as a new role assignment may take to apply, and anything else 5 times", async () => {
    const withVault = renderBootstrap({ ...args, vaultSecret: "https://kv-winfleet.vault.azure.net/secrets/s" });
    const f = await scriptFacts(withVault);
    assert.ok(ACCESS_RETRY_MINUTES >= 15, "Azure documents up to ten minutes");
    assert.match(
      withVault,
      /function Get-HttpStatus\(\$Failure\) \{\n {4}\$response = \$Failure\.Exception\.Response\n {4}if \(\$null -eq \$response\) \{ return 0 \}\n {4}return \[int\]\$response\.StatusCode\n\}/,
      "the status of both Windows PowerShell's and PowerShell 7's failures",
    );
    assert.match(
      withVault,
      /function Test-Retry\(\$Failure, \[int\]\$Attempt, \[datetime\]\$Deadline\) \{\n {4}\$status = Get-HttpStatus \$Failure\n {4}if \(\$status -eq 401 -or \$status -eq 403\) \{ return \(Get-Date\) -lt \$Deadline \}\n {4}return \$Attempt -lt 5\n\}/,
    );
    for (const fn of ["Get-Pinned", "Get-VaultSecrets"]) {
      assert.ok(
        f.commands.some((c) => c.inFunction === fn && c.name === "Test-Retry"),
        `${fn} asks Test-Retry whether to go on`,
      );
      assert.ok(
        f.commands.some(
          (c) =>
            c.inFunction === fn && c.name === "Get-Date" && withVault.includes(`$deadline = (Get-Date).AddMinutes(20)`),
        ),
        `${fn} sets its deadline when it starts`,
      );
    }
    assert.equal(
      withVault.match(/\$wait = \[math\]::Min\(30, \[math\]::Pow\(2, \$attempt\)\)/g)?.length,
      2,
      "30 s at most between tries",
    );
  });

  it("retries a download, and never names a SAS (the URL's query) in what it prints or throws", async () => {
    const f = await scriptFacts(renderBootstrap({ ...args, content: { ...blob, auth: "sas" } }));
    const inGet = f.commands.filter((c) => c.inFunction === "Get-Pinned");
    assert.match(
      renderBootstrap(args),
      /for \(\$attempt = 1; ; \$attempt\+\+\) \{\s+try \{\s+Invoke-WebRequest /,
      "a retry loop around Invoke-WebRequest",
    );
    assert.ok(
      inGet.some((c) => c.name === "Start-Sleep"),
      "with a pause between attempts",
    );
    assert.ok(
      renderBootstrap(args).includes("$shown = ($Url -split '\\?')[0]"),
      "the query cut off (a regex: the ? escaped)",
    );
    const said = [
      ...f.emissions.filter((e) => e.inFunction === "Get-Pinned" && e.kind === "throw").map((e) => e.variables),
      ...inGet.filter((c) => c.name === "Write-Output").map((c) => c.args.flatMap((a) => a.variables)),
    ];
    assert.ok(said.length >= 3);
    for (const variables of said)
      assert.ok(!variables.includes("url"), `a message reads $Url: ${variables.join(", ")}`);
  });

  describe("with a Key Vault secret for the larger secrets", () => {
    const id =
      "/subscriptions/0000/resourceGroups/rg-x/providers/Microsoft.ManagedIdentity/userAssignedIdentities/winfleet-win-nodes";
    const vaultSecret = "https://kv-winfleet.vault.azure.net/secrets/winfleet-dev-win-secrets";
    const withVault = renderBootstrap({ ...args, identity: id, vaultSecret });

    it("parses, and reads the secret with a Key Vault token of the pool's identity, before it checks the variables", async () => {
      assert.deepEqual(await powerShellSyntaxErrors(withVault), []);
      assert.ok(withVault.includes(`resource=https%3A%2F%2Fvault.azure.net&msi_res_id=${encodeURIComponent(id)}'`));
      assert.match(withVault, /\[string\]\$SecretsVersion\n\)/);
      assert.ok(
        withVault.includes(
          "$vaultUrl = 'https://kv-winfleet.vault.azure.net/secrets/winfleet-dev-win-secrets?api-version=7.4'",
        ),
        "the latest version without -SecretsVersion",
      );
      assert.ok(
        withVault.includes(
          "$vaultUrl = 'https://kv-winfleet.vault.azure.net/secrets/winfleet-dev-win-secrets/' + $SecretsVersion + '?api-version=7.4'",
        ),
      );
      assert.match(
        withVault,
        /if \(\$SecretsVersion -notmatch '\^\[0-9a-f\]\{32\}\$'\) \{ throw/,
        "a version, not anything that would change the URL",
      );
      const read = withVault.indexOf("(Get-VaultSecrets -Url $vaultUrl)");
      assert.ok(
        read > withVault.indexOf("function Get-VaultSecrets") && read < withVault.indexOf("foreach ($name in @("),
        "merged before the required variables are checked",
      );
      assert.match(
        withVault,
        /\$secretValues \| Add-Member -NotePropertyName \$p\.Name -NotePropertyValue \$p\.Value -Force/,
      );
      assert.doesNotMatch(
        renderBootstrap(args),
        /Get-VaultSecrets|vault\.azure\.net/,
        "nothing of it without a vault secret",
      );
      assert.throws(
        () => renderBootstrap({ ...args, vaultSecret: `${vaultSecret}/0123` }),
        /not a Key Vault secret URL without a version/,
      );
    });

    it("retries the token and the read (a new role assignment takes minutes to reach Key Vault), bounded, with a pause", async () => {
      const f = await scriptFacts(withVault);
      for (const fn of ["Get-ImdsToken", "Get-VaultSecrets"]) {
        const inFn = f.commands.filter((c) => c.inFunction === fn);
        assert.ok(
          inFn.some((c) => c.name === "Invoke-RestMethod"),
          fn,
        );
        assert.ok(
          inFn.some((c) => c.name === "Start-Sleep"),
          `${fn} pauses between attempts`,
        );
        assert.ok(
          f.emissions.some((e) => e.inFunction === fn && e.kind === "throw" && e.variables.includes("attempt")),
          `${fn} gives up after a bounded number of attempts`,
        );
      }
      assert.match(
        withVault,
        /function Get-VaultSecrets\(\[string\]\$Url\) \{\n {4}\$deadline = [^\n]*\n {4}for \(\$attempt = 1; ; \$attempt\+\+\) \{\n {8}try \{\n {12}\$response = Invoke-RestMethod [^\n]*Get-ImdsToken/,
        "a fresh token on each attempt",
      );
      assert.match(
        withVault,
        /if \(-not \(Test-Retry \$_ \$attempt \$deadline\)\) \{ throw "reading the node's secrets from \$Url failed/,
      );
      assert.ok(
        !f.commands.some(
          (c) => (c.inFunction === "Get-ImdsToken" || c.inFunction === "Get-VaultSecrets") && c.name === "Write-Output",
        ),
        "progress as warnings: a function's output is its result",
      );
    });

    it("never names a token, a secret value or what it parsed in what it prints or throws", async () => {
      const f = await scriptFacts(withVault);
      const fns = new Set(["Get-ImdsToken", "Get-VaultSecrets", "Get-StorageHeaders"]);
      const said = [
        ...f.emissions
          .filter((e) => e.inFunction !== undefined && fns.has(e.inFunction) && e.kind === "throw")
          .map((e) => e.variables),
        ...f.commands
          .filter((c) => c.inFunction !== undefined && fns.has(c.inFunction) && /^Write-/.test(c.name))
          .map((c) => c.args.flatMap((a) => a.variables)),
      ];
      assert.ok(said.length >= 5, `${said.length}`);
      for (const variables of said)
        for (const v of ["token", "response", "values", "_", "secrets", "secretvalues", "p"])
          assert.ok(!variables.includes(v), `a message reads $${v}: ${variables.join(", ")}`);
      assert.match(
        withVault,
        /try \{ \$values = \$response\.value \| ConvertFrom-Json \} catch \{ \$values = \$null \}/,
        "a value that does not parse is not quoted by ConvertFrom-Json's error",
      );
      assert.match(
        withVault,
        /\$reason = \$_\.Exception\.Message\n/,
        "the reason is the exception's message (status and text, not the request's headers)",
      );
    });
  });

  it("restricts its directory by SID, so the ACL works on any display language", () => {
    const s = renderBootstrap(args);
    assert.match(
      s,
      /icacls\.exe \$root \/inheritance:r \/grant:r '\*S-1-5-18:\(OI\)\(CI\)F' '\*S-1-5-32-544:\(OI\)\(CI\)F'/,
    );
    assert.doesNotMatch(s, /'(SYSTEM|Administrators):/);
  });

  it("writes the agent config without BOM or added newline and compares it byte for byte (a re-run restarts nothing)", () => {
    const s = renderBootstrap(args);
    assert.doesNotMatch(s, /Set-Content[^\n]*configPath/);
    assert.match(s, /\[IO\.File\]::ReadAllText\(\$configPath\) -ceq \$json/);
    assert.match(
      s,
      /\[IO\.File\]::WriteAllText\("\$configPath\.partial", \$json, \(New-Object System\.Text\.UTF8Encoding -ArgumentList \$false\)\)/,
    );
  });

  it("runs the agent as a Windows service, not a scheduled task (see agent-service.test.ts)", () => {
    const s = renderBootstrap(args);
    assert.match(s, /\$registered = Register-WinfleetAgentService -Name 'winfleet-agent' /);
    assert.doesNotMatch(s, /Register-ScheduledTask|\$watchdog/);
  });
});
