/**
 * The Windows content checks (agent/content/windows-checks.ts), each shown to
 * fail on a deliberately broken copy of the shipped content before the
 * shipped content is shown to pass them all: a pass means something.
 */
import assert from "node:assert/strict";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { analyzeContent } from "../../agent/content/analysis";
import { CHECKS, type CheckName, type Finding } from "../../agent/content/findings";
import { checkContent, loadAllowlist } from "../../agent/content/windows-checks";
import { scratchDir } from "../support";

const CONTENT = join(__dirname, "..", "..", "content");
const scratch = scratchDir("windows-checks-");

interface Edit {
  /** Below content/components/. */
  readonly file: string;
  readonly find: string;
  readonly replace: string;
}

interface Mutation {
  readonly check: CheckName;
  readonly what: string;
  readonly edits: readonly Edit[];
  readonly where: RegExp;
  readonly message: RegExp;
}

const KUBEADM = "join-kubeadm/1.1.0/files/k/winfleet/join-kubeadm/install.ps1";
const PREREQS_UNINSTALL = "prereqs/1.1.0/files/k/winfleet/prereqs/uninstall.ps1";
const CSI_INSTALL = "csi-proxy/1.1.2-hotfix.20230807-1/files/k/winfleet/csi-proxy/install.ps1";
const KUBELET_INSTALL = "kubelet/1.34.7-1/files/k/winfleet/kubelet/install.ps1";
const DOWNLOAD_LIB = "winfleet-common/1.1.0/files/k/winfleet/common/lib/Download.ps1";
const before = (file: string, anchor: string, insert: string): Edit => ({
  file,
  find: anchor,
  replace: `${insert}\n${anchor}`,
});
const atEnd = (file: string, insert: string): Edit => before(file, "exit 0\n", insert);

const MUTATIONS: readonly Mutation[] = [
  {
    check: "syntax",
    what: "an unclosed block",
    edits: [
      {
        file: "kube-proxy/1.34.7-1/files/k/winfleet/kube-proxy/kube-proxy-service.ps1",
        find: "if ($hnsNetwork.Type -eq 'Overlay') {",
        replace: "if ($hnsNetwork.Type -eq 'Overlay') { {",
      },
    ],
    where: /kube-proxy-service\.ps1/,
    message: /syntax error/,
  },
  {
    check: "commands",
    what: "a PowerShell-7-only cmdlet",
    edits: [atEnd(CSI_INSTALL, "Remove-Service -Name 'csi-proxy'")],
    where: /csi-proxy\/.*install\.ps1:\d+/,
    message: /calls Remove-Service, which is not a Windows PowerShell 5\.1 cmdlet/,
  },
  {
    check: "commands",
    what: "an alias",
    edits: [atEnd(CSI_INSTALL, "ls C:\\k")],
    where: /install\.ps1/,
    message: /calls ls,/,
  },
  {
    check: "commands",
    what: "a parameter only PowerShell 7 has",
    edits: [atEnd(CSI_INSTALL, "Set-Service -Name 'csi-proxy' -BinaryPathName 'x'")],
    where: /install\.ps1/,
    message: /-binarypathname to Set-Service, a parameter only PowerShell 7 has/,
  },
  {
    check: "commands",
    what: "a winfleet-common function it does not export",
    edits: [atEnd(CSI_INSTALL, "$spki = Get-WinfleetSpkiSha256 -Der $bytes")],
    where: /install\.ps1/,
    message: /defines it but does not export it/,
  },
  {
    check: "commands",
    what: "an executable nobody named",
    edits: [atEnd(CSI_INSTALL, "$null = Invoke-WinfleetNative -FilePath (Join-Path $root 'k\\mystery.exe')")],
    where: /install\.ps1/,
    message: /resolves to no named executable/,
  },
  {
    check: "commands",
    what: "& on a variable that holds nothing known",
    edits: [atEnd(CSI_INSTALL, "$tool = Get-WinfleetVariable -Name 'CSI_PROXY_SHA256'\n& $tool")],
    where: /install\.ps1/,
    message: /runs & \$tool, which resolves to no shipped script/,
  },
  {
    check: "downloads",
    what: "Invoke-WebRequest in a component",
    edits: [atEnd(CSI_INSTALL, "Invoke-WebRequest -Uri 'https://example.com/x.exe' -OutFile 'x.exe'")],
    where: /install\.ps1/,
    message: /fetches with Invoke-WebRequest outside/,
  },
  {
    check: "downloads",
    what: "a WebClient",
    edits: [atEnd(CSI_INSTALL, "$client = New-Object System.Net.WebClient")],
    where: /install\.ps1/,
    message: /uses \[system\.net\.webclient\]/,
  },
  {
    check: "downloads",
    what: "curl.exe",
    edits: [atEnd(CSI_INSTALL, "curl.exe -sfL https://example.com/x -o x\nif ($LASTEXITCODE -ne 0) { throw 'x' }")],
    where: /install\.ps1/,
    message: /fetches with curl\.exe/,
  },
  {
    check: "downloads",
    what: "unpacking outside the verified helper",
    edits: [atEnd(CSI_INSTALL, "Expand-Archive -Path 'a.zip' -DestinationPath 'b'")],
    where: /install\.ps1/,
    message: /unpacks or runs with Expand-Archive/,
  },
  {
    check: "downloads",
    what: "the raw fetch called from a component",
    edits: [atEnd(CSI_INSTALL, "Invoke-WinfleetHttpGet -Uri 'https://example.com/x' -OutFile 'x'")],
    where: /install\.ps1/,
    message: /only Save-WinfleetDownload and Get-WinfleetClusterCA may call/,
  },
  {
    check: "downloads",
    what: "a download kept before its digest is checked",
    edits: [
      {
        file: DOWNLOAD_LIB,
        find: "    $actual = (Get-FileHash -LiteralPath $partial",
        replace:
          "    Move-Item -LiteralPath $partial -Destination $target -Force\n    $actual = (Get-FileHash -LiteralPath $partial",
      },
    ],
    where: /Download\.ps1/,
    message: /save-winfleetdownload must check the digest/,
  },
  {
    check: "downloads",
    what: "an artifact unpacked without checking its digest again",
    edits: [
      {
        file: DOWNLOAD_LIB,
        find: "    if (-not (Test-WinfleetFileHash -Path $Artifact.Path",
        replace: "    if (-not (Test-Path -Path $Artifact.Path",
      },
    ],
    where: /Download\.ps1/,
    message: /expand-winfleetartifact must check the digest/,
  },
  {
    check: "downloads",
    what: "the raw fetch exported from the module",
    edits: [
      {
        file: "winfleet-common/1.1.0/files/k/winfleet/common/WinfleetCommon.psm1",
        find: "    'Save-WinfleetDownload',",
        replace: "    'Save-WinfleetDownload',\n    'Invoke-WinfleetHttpGet',",
      },
    ],
    where: /winfleet-common_1\.1\.0/,
    message: /exports Invoke-WinfleetHttpGet/,
  },
  {
    check: "native-exit-codes",
    what: "a native call whose exit code nobody reads",
    edits: [atEnd(CSI_INSTALL, "sc.exe stop csi-proxy\nWrite-WinfleetLog 'stopped'")],
    where: /install\.ps1:\d+/,
    message: /runs sc\.exe and never looks at \$LASTEXITCODE/,
  },
  {
    check: "exits",
    what: "a section script that does not end in exit",
    edits: [{ file: PREREQS_UNINSTALL, find: "    }\n}\nexit 0\n", replace: "    }\n}\n" }],
    where: /prereqs\/.*uninstall\.ps1/,
    message: /does not end in `exit`/,
  },
  {
    check: "exits",
    what: "a metadata command that drops the script's exit code",
    edits: [
      {
        file: "node-reset/1.1.0/metadata.json",
        find: "install.ps1'); exit $LASTEXITCODE\"]",
        replace: "install.ps1')\"]",
      },
    ],
    where: /node-reset\/1\.1\.0\/metadata\.json: install\.commands\[0\]/,
    message: /does not end in `exit \$LASTEXITCODE`/,
  },
  {
    check: "outputs",
    what: "a helper's result left in the output",
    edits: [
      {
        file: "kubelet/1.34.7-1/files/k/winfleet/kubelet/uninstall.ps1",
        find: "$null = Remove-WinfleetService -Name 'kubelet'",
        replace: "Remove-WinfleetService -Name 'kubelet'",
      },
    ],
    where: /kubelet\/.*uninstall\.ps1:\d+/,
    message: /Remove-WinfleetService returns a value/,
  },
  {
    check: "kubelet-config",
    what: "enforceNodeAllocatable ['pods'] with cgroupsPerQOS false (the kubelet exits at start)",
    edits: [
      {
        file: KUBELET_INSTALL,
        find: "enforceNodeAllocatable         = @()",
        replace: "enforceNodeAllocatable         = @('pods')",
      },
    ],
    where: /kubelet\/1\.34\.7-1\/.*install\.ps1:\d+/,
    message:
      /the kubelet refuses this configuration: enforceNodeAllocatable contains "pods", which needs cgroupsPerQOS true/,
  },
  {
    check: "kubelet-config",
    what: "enforceNodeAllocatable left out (it defaults to ['pods'])",
    edits: [{ file: KUBELET_INSTALL, find: "    enforceNodeAllocatable         = @()\n", replace: "" }],
    where: /kubelet\/1\.34\.7-1\/.*install\.ps1:\d+/,
    message: /an absent enforceNodeAllocatable defaults to \["pods"\]/,
  },
  {
    check: "kubelet-config",
    what: "a taint with an invalid effect",
    edits: [
      {
        file: KUBELET_INSTALL,
        find: "$taints = @()\n",
        replace: "$taints = @([ordered]@{ key = 'os'; value = 'windows'; effect = 'NoScheduling' })\n",
      },
    ],
    where: /install\.ps1/,
    message: /registerWithTaints\[0\]\.effect "NoScheduling" must be one of/,
  },
  {
    check: "kubelet-config",
    what: "a configuration built from more than plain data",
    edits: [
      {
        file: KUBELET_INSTALL,
        find: "    resolvConf                     = ''",
        replace: "    resolvConf                     = (Get-Date).ToString()",
      },
    ],
    where: /install\.ps1/,
    message: /builds a KubeletConfiguration from more than plain data/,
  },
  {
    check: "secrets",
    what: "a token in a log line",
    edits: [atEnd(KUBEADM, 'Write-WinfleetLog "joined with $token"')],
    where: /join-kubeadm\/.*install\.ps1:\d+/,
    message: /passes the secret KUBE_BOOTSTRAP_TOKEN \(via \$token\) to Write-WinfleetLog/,
  },
  {
    check: "secrets",
    what: "a token copied and written to a plain file",
    edits: [
      atEnd(
        KUBEADM,
        "$copy = $token.Trim()\n$null = Set-WinfleetFileContent -Path (Join-Path $root 'k\\token.txt') -Content $copy",
      ),
    ],
    where: /install\.ps1/,
    message: /via \$copy\) to Set-WinfleetFileContent/,
  },
  {
    check: "secrets",
    what: "a token in a secret file the component does not own",
    edits: [atEnd(KUBEADM, "$null = Set-WinfleetSecretFile -Path (Join-Path $root 'etc\\token') -Content $bootstrap")],
    where: /install\.ps1/,
    message: /to \/etc\/token, which is not a file the component owns/,
  },
  {
    check: "secrets",
    what: "a token on a command line",
    edits: [
      atEnd(
        "join-rke2/1.34.7+rke2r1-1/files/k/winfleet/join-rke2/install.ps1",
        "$null = Invoke-WinfleetNative -FilePath $rke2 -ArgumentList @('agent', '--token', $token)",
      ),
    ],
    where: /join-rke2\/.*install\.ps1/,
    message: /RKE2_TOKEN \(via \$token\) to Invoke-WinfleetNative/,
  },
  {
    check: "secrets",
    what: "a token in an exception",
    edits: [atEnd(KUBEADM, 'if ($false) { throw "bad token $token" }')],
    where: /install\.ps1/,
    message: /throws the secret KUBE_BOOTSTRAP_TOKEN/,
  },
  {
    check: "secrets",
    what: "a secret read straight from the environment and printed",
    edits: [atEnd("kube-proxy/1.34.7-1/files/k/winfleet/kube-proxy/install.ps1", "$env:KUBE_PROXY_KUBECONFIG")],
    where: /kube-proxy\/.*install\.ps1/,
    message: /writes to the output the secret KUBE_PROXY_KUBECONFIG/,
  },
  {
    check: "secrets",
    what: "the secret-file helper printing what it writes",
    edits: [
      {
        file: "winfleet-common/1.1.0/files/k/winfleet/common/lib/Files.ps1",
        find: "    # Written in place:",
        replace: '    Write-Host "writing $Content"\n    # Written in place:',
      },
    ],
    where: /Files\.ps1/,
    message: /a secret parameter \(via \$content\) to Write-Host/,
  },
  {
    check: "uninstall",
    what: "a firewall rule the uninstall forgets",
    edits: [
      {
        file: PREREQS_UNINSTALL,
        find: "$null = Remove-WinfleetFirewallRule -Name 'winfleet-cni-vxlan'\n",
        replace: "",
      },
    ],
    where: /prereqs\/.*install\.ps1/,
    message: /install creates firewall rule winfleet-cni-vxlan, which the uninstall section never removes/,
  },
  {
    check: "uninstall",
    what: "a service the uninstall forgets",
    edits: [
      {
        file: "csi-proxy/1.1.2-hotfix.20230807-1/files/k/winfleet/csi-proxy/uninstall.ps1",
        find: "$null = Remove-WinfleetService -Name 'csi-proxy'\n",
        replace: "",
      },
    ],
    where: /csi-proxy\/.*install\.ps1/,
    message: /install creates service csi-proxy/,
  },
  {
    check: "uninstall",
    what: "a PATH entry the uninstall forgets",
    edits: [
      {
        file: "containerd/1.7.25-1/files/k/winfleet/containerd/uninstall.ps1",
        find: "$null = Remove-WinfleetPathEntry -Path (Join-Path $root 'Program Files\\containerd')\n",
        replace: "",
      },
    ],
    where: /containerd\/.*install\.ps1/,
    message: /install creates PATH entry \/Program Files\/containerd/,
  },
  {
    check: "uninstall",
    what: "a startup task the uninstall forgets",
    edits: [
      {
        file: "node-reset/1.1.0/files/k/winfleet/node-reset/uninstall.ps1",
        find: "$null = Remove-WinfleetScheduledTask -Name 'winfleet-node-reset'\n",
        replace: "",
      },
    ],
    where: /node-reset\/.*install\.ps1/,
    message: /install creates scheduled task winfleet-node-reset/,
  },
  {
    check: "uninstall",
    what: "a Defender exclusion the uninstall forgets",
    edits: [{ file: PREREQS_UNINSTALL, find: "    (Join-Path $root 'opt\\cni'),\n", replace: "" }],
    where: /prereqs\/.*install\.ps1/,
    message: /install creates Defender exclusion \/opt\/cni/,
  },
  {
    check: "uninstall",
    what: "a service whose name is computed",
    edits: [
      atEnd(
        CSI_INSTALL,
        "$n = Get-WinfleetVariable -Name 'CSI_PROXY_SHA256'\n$null = Set-WinfleetService -Name $n -BinaryPath 'x'",
      ),
    ],
    where: /csi-proxy\/.*install\.ps1/,
    message: /whose name cannot be resolved/,
  },
  {
    check: "variables",
    what: "an undeclared variable",
    edits: [
      atEnd(
        "winfleet-broker/1.0.0/files/k/winfleet/winfleet-broker/install.ps1",
        "$x = Get-WinfleetVariable -Name 'BROKER_SOMETHING_NEW'",
      ),
    ],
    where: /winfleet-broker\/.*install\.ps1/,
    message: /reads BROKER_SOMETHING_NEW, which winfleet-broker_1\.0\.0 does not declare/,
  },
  {
    check: "variables",
    what: "an undeclared environment read",
    edits: [atEnd("winfleet-broker/1.0.0/files/k/winfleet/winfleet-broker/install.ps1", "$y = $env:SOMETHING_ELSE")],
    where: /install\.ps1/,
    message: /reads SOMETHING_ELSE/,
  },
  {
    check: "variables",
    what: "a declared variable nothing reads",
    edits: [
      {
        file: "winfleet-broker/1.0.0/metadata.json",
        find: '"variables": {',
        replace: '"variables": {\n    "BROKER_UNUSED": { "required": false },',
      },
    ],
    where: /winfleet-broker_1\.0\.0 metadata/,
    message: /declares BROKER_UNUSED, which none of its sections reads/,
  },
  {
    check: "variables",
    what: "a download digest variable not declared",
    edits: [
      {
        file: "csi-proxy/1.1.2-hotfix.20230807-1/metadata.json",
        find: '"CSI_PROXY_SHA256": { "description": "SHA-256 of csi-proxy-v1.1.2-hotfix.20230807.tar.gz (no published value was found to pin)" },',
        replace: "",
      },
    ],
    where: /artifacts\.json/,
    message: /reads CSI_PROXY_SHA256/,
  },
];

let copies = 0;
function mutatedCopy(edits: readonly Edit[]): string {
  const dir = join(scratch, `content-${copies++}`);
  cpSync(CONTENT, dir, { recursive: true });
  for (const e of edits) {
    const file = join(dir, "components", ...e.file.split("/"));
    const text = readFileSync(file, "utf8");
    assert.ok(text.includes(e.find), `the mutation's anchor is not in ${e.file}: ${JSON.stringify(e.find)}`);
    writeFileSync(file, text.replace(e.find, e.replace));
  }
  return dir;
}

const show = (findings: readonly Finding[]): string =>
  findings.map((f) => `  ${f.check} ${f.where}: ${f.message}`).join("\n") || "  (no findings)";

describe("Windows content checks", () => {
  for (const m of MUTATIONS) {
    it(`${m.check} fails on ${m.what}`, async () => {
      const findings = checkContent(await analyzeContent(mutatedCopy(m.edits)));
      assert.ok(
        findings.some((f) => f.check === m.check && m.where.test(f.where) && m.message.test(f.message)),
        `expected a ${m.check} finding matching ${m.where} / ${m.message}, got:\n${show(findings)}`,
      );
    });
  }

  it("every check is shown to fail on some broken content", () => {
    // From the checks' own list: a check added without a mutation that trips it fails here.
    const shown = new Set(MUTATIONS.map((m) => m.check));
    for (const check of CHECKS) assert.ok(shown.has(check), check);
  });

  it("the shipped content passes every check", async () => {
    const content = await analyzeContent(CONTENT);
    assert.ok(content.components.length >= 12, "the Windows components are there");
    const findings = checkContent(content);
    assert.deepEqual(findings, [], show(findings));
  });
});

describe("the command allowlist (agent/content/data/powershell-allowlist.json)", () => {
  const allowlist = loadAllowlist();

  it("lists Windows PowerShell 5.1 cmdlets, not PowerShell-7-only ones or aliases", () => {
    for (const c of [
      "get-windowsoptionalfeature",
      "new-netfirewallrule",
      "register-scheduledtask",
      "add-mppreference",
      "get-hnsnetwork",
      "invoke-cimmethod",
    ])
      assert.ok(allowlist.cmdlets.has(c), c);
    for (const c of [
      "remove-service",
      "get-error",
      "join-string",
      "test-json",
      "get-uptime",
      "convertfrom-markdown",
      "ls",
      "%",
      "?",
      "iwr",
      "cat",
    ])
      assert.ok(!allowlist.cmdlets.has(c), c);
  });

  it("keeps network fetches and unpacking apart from ordinary commands", () => {
    for (const c of allowlist.networkCommands)
      assert.ok(!allowlist.executables.has(c), `${c} is both a network command and a plain executable`);
    assert.ok(allowlist.networkTypes.has("system.net.webclient"));
    assert.ok(allowlist.unpack.has("expand-archive") && allowlist.unpack.has("tar.exe"));
  });

  it("is refused when malformed", () => {
    assert.throws(() => loadAllowlist({ cmdlets: "Get-Item" }));
  });
});
