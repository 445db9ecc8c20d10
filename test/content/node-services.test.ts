/**
 * How the node's Kubernetes services run, read from the scripts' parse trees:
 * kube-proxy under its own identity, its access proven by
 * SelfSubjectAccessReview before the service is registered; the cluster side
 * (ClusterJoin's renders) that provisions that identity with least privilege;
 * and the start order after a reboot — the kubelet and kube-proxy start on
 * demand, only once the CNI has initialised, under the lock the boot-time HNS
 * reset holds.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { AnalyzedComponent } from "../../agent/content/analysis";
import { argumentFor, evaluatePath } from "../../agent/content/host-effects";
import type { ScriptFacts } from "../../agent/content/powershell-facts";
import {
  CALICO_ACCOUNT,
  CALICO_TOKEN_SECRET,
  KUBE_PROXY_ACCOUNT,
  KUBE_PROXY_TOKEN_SECRET,
  renderCalicoAccess,
  renderKubeProxyAccess,
} from "../../components/cluster-render";
import { CALICO_WINDOWS_LABEL, CALICO_WINDOWS_LABEL_VALUE } from "../../components/calico-windows-render";
import { validateKubernetesObject } from "../support";
import { CONTENT, shippedContent } from "./shipped";

const shipped = shippedContent();
const { component } = shipped;
const facts = (c: AnalyzedComponent, leaf: string): ScriptFacts => shipped.script(c, leaf).facts;
const NO_ARG = { text: "", strings: [], variables: [] };
const firstLine = (f: ScriptFacts, name: RegExp): number =>
  Math.min(...f.commands.filter((c) => name.test(c.name)).map((c) => c.line));

describe("kube-proxy's identity", () => {
  it("declares its own credentials as secrets, none of them required (the preflight decides)", () => {
    const vars = component("kube-proxy").metadata.variables ?? {};
    for (const name of ["KUBE_PROXY_KUBECONFIG", "KUBE_PROXY_TOKEN"]) {
      assert.equal(vars[name]?.secret, true, name);
    }
    assert.ok(vars.KUBE_API_SERVER, "KUBE_API_SERVER, which the token's kubeconfig points at");
  });

  it("asks the API server (kubectl auth can-i: a SelfSubjectAccessReview) before it registers the service", () => {
    const f = facts(component("kube-proxy"), "install.ps1");
    const reviews = f.commands.filter(
      (c) =>
        /^Invoke-WinfleetNative$/i.test(c.name) &&
        c.args.some((a) => a.strings.includes("auth")) &&
        c.args.some((a) => a.strings.includes("can-i")),
    );
    assert.equal(reviews.length, 1, "one kubectl auth can-i call");
    const review = reviews[0];
    assert.ok(review);
    assert.ok(
      review.args.some((a) => a.text.includes("--kubeconfig=$kubeconfig")),
      "with kube-proxy's own kubeconfig",
    );
    const resources = f.assignments
      .filter((a) => a.strings.some((s) => /endpointslices\.discovery\.k8s\.io/.test(s)))
      .flatMap((a) => a.strings);
    for (const needed of [
      "list services",
      "watch services",
      "list endpointslices.discovery.k8s.io",
      "watch endpointslices.discovery.k8s.io",
    ]) {
      assert.ok(resources.includes(needed) || f.commands.some((c) => c.statementText.includes(`'${needed}'`)), needed);
    }
    assert.ok(
      review.line < firstLine(f, /^Set-WinfleetHostedService$/i),
      "the review comes before the service is registered",
    );
    const refusal = f.emissions.find((e) => e.kind === "throw" && /may not: /.test(e.text));
    assert.ok(
      refusal && refusal.line > review.line && refusal.line < firstLine(f, /^Set-WinfleetHostedService$/i),
      "a denied review stops the install",
    );
    assert.match(refusal.text, /KUBE_PROXY_TOKEN/);
    assert.match(refusal.text, /KUBE_PROXY_KUBECONFIG/);
  });

  it("writes its own kubeconfig from KUBE_PROXY_TOKEN, as a secret file", () => {
    const f = facts(component("kube-proxy"), "install.ps1");
    const built = f.commands.find((c) => /^ConvertTo-WinfleetKubeconfig$/i.test(c.name));
    assert.ok(built?.args.some((a) => a.parameter === "token" && a.variables.includes("proxytoken")));
    assert.ok(
      f.commands.some(
        (c) => /^Set-WinfleetSecretFile$/i.test(c.name) && c.args.some((a) => a.variables.includes("proxyconfig")),
      ),
    );
  });
});

describe("ClusterJoin's kube-proxy access", () => {
  const objects = renderKubeProxyAccess("winfleet-system", "test");

  it("validates against the Kubernetes OpenAPI schema", () => {
    for (const o of objects) validateKubernetesObject(o);
  });

  it("is a service account with a token Secret the token controller fills", () => {
    const secret = objects.find((o) => o.kind === "Secret") as unknown as {
      metadata: { name: string; annotations: Record<string, string> };
      type: string;
    };
    assert.equal(secret.metadata.name, KUBE_PROXY_TOKEN_SECRET);
    assert.equal(secret.type, "kubernetes.io/service-account-token");
    assert.equal(secret.metadata.annotations["kubernetes.io/service-account.name"], KUBE_PROXY_ACCOUNT);
    assert.ok(objects.some((o) => o.kind === "ServiceAccount" && o.metadata.name === KUBE_PROXY_ACCOUNT));
  });

  it("grants what kube-proxy reads and the events it writes, nothing more", () => {
    const role = objects.find((o) => o.kind === "ClusterRole") as unknown as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    const grants = role.rules
      .flatMap((r) =>
        r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}${g ? `.${g}` : ""}`))),
      )
      .sort();
    for (const needed of [
      "list services",
      "watch services",
      "list endpointslices.discovery.k8s.io",
      "watch endpointslices.discovery.k8s.io",
      "get nodes",
      "create events.events.k8s.io",
    ])
      assert.ok(grants.includes(needed), needed);
    for (const g of grants)
      assert.match(
        g,
        /^(get|list|watch) (services|nodes|endpointslices\.discovery\.k8s\.io)$|^(create|patch|update) events(\.events\.k8s\.io)?$/,
        g,
      );
    const binding = objects.find((o) => o.kind === "ClusterRoleBinding") as unknown as {
      subjects: { kind: string; name: string }[];
      roleRef: { name: string };
    };
    assert.deepEqual(
      binding.subjects.map((s) => `${s.kind}/${s.name}`),
      [`ServiceAccount/${KUBE_PROXY_ACCOUNT}`],
    );
    assert.equal(binding.roleRef.name, "winfleet:test:kube-proxy");
  });
});

describe("Calico for Windows on the node", () => {
  it("has no identity of its own: the operator's containers run as the operator's calico-node (ClusterJoin keeps winfleet-calico-node, schema-valid, for nodes still on a node-side Calico)", () => {
    const vars = component("calico").metadata.variables ?? {};
    for (const name of ["CALICO_KUBECONFIG", "CALICO_TOKEN"]) assert.equal(vars[name], undefined, name);
    const objects = renderCalicoAccess("winfleet-system", "test");
    for (const o of objects) validateKubernetesObject(o);
    const secret = objects.find((o) => o.kind === "Secret") as unknown as {
      metadata: { name: string; annotations: Record<string, string> };
    };
    assert.equal(secret.metadata.name, CALICO_TOKEN_SECRET);
    assert.equal(secret.metadata.annotations["kubernetes.io/service-account.name"], CALICO_ACCOUNT);
  });

  it("clears the node-side install, then labels the node with what the operator's DaemonSet selects, then waits for Calico's CNI configuration and network", () => {
    const f = facts(component("calico"), "install.ps1");
    const label = f.assignments.find((a) => a.variable === "label");
    assert.deepEqual(label?.strings, [`${CALICO_WINDOWS_LABEL}=${CALICO_WINDOWS_LABEL_VALUE}`]);
    const line = (re: RegExp, text?: RegExp): number =>
      Math.min(
        ...f.commands
          .filter((c) => re.test(c.name) && (text === undefined || text.test(c.statementText)))
          .map((c) => c.line),
      );
    const script = readFileSync(join(CONTENT, shipped.script(component("calico"), "install.ps1").where), "utf8");
    assert.match(script, /foreach \(\$service in @\('CalicoConfd', 'CalicoFelix', 'CalicoNode', 'CalicoUpgrade'\)\)/);
    assert.ok(line(/^Remove-WinfleetService$/i) < line(/^Remove-HnsNetwork$/i));
    assert.ok(line(/^Remove-HnsNetwork$/i) < line(/^Invoke-WinfleetNative$/i, /'label'/), "the networks go before");
    assert.ok(line(/^Invoke-WinfleetNative$/i, /'label'/) < line(/^Wait-WinfleetCondition$/i), "then the wait");
    const wait = f.commands.find((c) => /^Wait-WinfleetCondition$/i.test(c.name));
    assert.match(wait?.statementText ?? "", /cniConfig/);
    assert.match(wait?.statementText ?? "", /'Calico'/);
    assert.ok(wait?.args.some((a) => a.parameter === "timeoutseconds" && a.variables.includes("timeout")));
    assert.equal(component("calico").metadata.isolated, true, "the vSwitch drop stays inside its isolated step");
  });

  it("stops the node-side services before the files phase removes what they run from, and keeps the upgrade in place (post_upgrade, after the kubelet's)", () => {
    const m = component("calico").metadata;
    assert.equal(m.pre_upgrade.uninstall, false);
    const pre = m.pre_upgrade.commands.join("\n");
    for (const name of ["CalicoFelix", "CalicoNode"])
      assert.match(pre, new RegExp(`Remove-WinfleetService -Name '${name}'`));
    assert.ok(m.post_upgrade.priority > component("kubelet").metadata.post_upgrade.priority);
    assert.ok(m.post_upgrade.priority > component("join-kubeadm").metadata.post_upgrade.priority);
    assert.ok(m.post_upgrade.priority < component("kube-proxy").metadata.post_upgrade.priority);
  });

  it("removes the node-side C:\\CalicoWindows, and nothing loads or runs from there (any user may create it under C:\\)", () => {
    const f = facts(component("calico"), "install.ps1");
    const removal = f.commands.find(
      (c) =>
        /^Remove-WinfleetItem$/i.test(c.name) && evaluatePath(f, argumentFor(c, "path") ?? NO_ARG) === "/CalicoWindows",
    );
    assert.ok(removal, "calico's install removes C:\\CalicoWindows");
    const labelled = f.commands.find((c) => /^Invoke-WinfleetNative$/i.test(c.name) && /'label'/.test(c.statementText));
    assert.ok(labelled && removal.line < labelled.line, "before the node is labelled for Calico's containers");
    for (const section of ["install", "post_upgrade"] as const)
      assert.ok(
        component("calico").sections[section].scripts.some((s) => s.where.endsWith("calico/install.ps1")),
        `${section} runs it`,
      );
    // Any other mention of the directory is code SYSTEM would take from a place Users can write.
    const mentions: string[] = [];
    for (const c of shipped.content.components) {
      const sources = [...c.scripts, ...Object.values(c.sections).flatMap((x) => x.commands)];
      for (const s of sources) {
        const removals = new Set(
          s.facts.commands.filter((x) => /^Remove-WinfleetItem$/i.test(x.name)).map((x) => x.line),
        );
        const named = [
          ...s.facts.commands.map((x) => ({ line: x.line, strings: x.args.flatMap((a) => a.strings) })),
          ...s.facts.assignments,
        ];
        for (const n of named)
          if (n.strings.some((x) => /(^|\\)CalicoWindows(\\|$)/i.test(x)) && !removals.has(n.line))
            mentions.push(`${s.where}:${n.line}`);
      }
    }
    assert.deepEqual([...new Set(mentions)], []);
  });

  it("its uninstall drops the label before it removes the networks", () => {
    const f = facts(component("calico"), "uninstall.ps1");
    const labelled = f.commands.find(
      (c) => /^Invoke-WinfleetNative$/i.test(c.name) && c.statementText.includes("winfleet.io/calico-windows-"),
    );
    const removed = f.commands.find((c) => /^Remove-HnsNetwork$/i.test(c.name));
    assert.ok(labelled && removed && labelled.line < removed.line);
  });
});

const common = (): AnalyzedComponent => component("winfleet-common");
const libFacts = (leaf: string): ScriptFacts => facts(common(), leaf);
const startupTypes = (f: ScriptFacts): Record<string, string> =>
  Object.fromEntries(
    f.commands
      .filter((c) => /^Set-Winfleet(Hosted)?Service$/i.test(c.name))
      .map((c) => [
        c.args.find((a) => a.parameter === "name")?.strings[0] ?? "",
        c.args.find((a) => a.parameter === "startuptype")?.strings[0] ?? "",
      ]),
  );
const inFunction = (f: ScriptFacts, fn: string, name: RegExp): number[] =>
  f.commands.filter((c) => c.inFunction?.toLowerCase() === fn.toLowerCase() && name.test(c.name)).map((c) => c.line);

describe("the node services' start order", () => {
  it("registers every node service to start automatically at boot, each waiting for its needs in its own wrapper", () => {
    assert.deepEqual(startupTypes(facts(component("containerd"), "install.ps1")), { containerd: "Automatic" });
    assert.deepEqual(startupTypes(facts(component("kubelet"), "install.ps1")), { kubelet: "Automatic" });
    assert.deepEqual(startupTypes(facts(component("kube-proxy"), "install.ps1")), {
      "winfleet-kube-proxy": "Automatic",
    });
    const needs = (c: string, leaf: string): string[] =>
      facts(component(c), leaf)
        .commands.filter((x) => /^Wait-WinfleetServiceNeeds$/i.test(x.name))
        .flatMap((x) => x.args.find((a) => a.parameter === "needs")?.strings ?? []);
    assert.deepEqual(needs("kubelet", "kubelet-service.ps1"), ["containerd", "hns-reset", "network", "file"]);
    assert.deepEqual(needs("kube-proxy", "kube-proxy-service.ps1"), ["hns-reset", "network", "file"]);
    // Each wrapper waits before its program runs.
    for (const [c, leaf, program] of [
      ["kubelet", "kubelet-service.ps1", "kubelet"],
      ["kube-proxy", "kube-proxy-service.ps1", "kubeProxy"],
    ] as const) {
      const f = facts(component(c), leaf);
      const waited = firstLine(f, /^Wait-WinfleetServiceNeeds$/i);
      const ran = f.commands.find((x) => x.operator === "&" && x.name === `$${program}`);
      assert.ok(ran && waited < ran.line, `${leaf} waits before it runs ${program}`);
    }
  });

  it("each component declares the services it registers (what serve's re-verify brings back), all started automatically", () => {
    for (const c of shipped.content.components) {
      const registered = c.scripts
        .flatMap((sc) => sc.facts.commands)
        .filter((x) => /^Set-Winfleet(Hosted)?Service$/i.test(x.name) && x.inFunction === undefined)
        .map((x) => ({
          name: x.args.find((a) => a.parameter === "name")?.strings[0] ?? "",
          start: x.args.find((a) => a.parameter === "startuptype")?.strings[0] ?? "Automatic",
        }));
      assert.deepEqual(
        [...(c.metadata.services ?? [])].sort(),
        registered.map((r) => r.name).sort(),
        `${c.key} declares what it registers`,
      );
      for (const r of registered) assert.equal(r.start, "Automatic", `${c.key}: ${r.name}`);
    }
  });

  it("the boot task starts every service, goes past one that fails, retries it, and fails the run while one still fails", () => {
    const boot = libFacts("Boot.ps1");
    const inStart = (re: RegExp): number[] => inFunction(boot, "Start-WinfleetNodeServices", re);
    assert.equal(inStart(/^Start-WinfleetService$/).length, 1);
    assert.equal(inStart(/^Start-Sleep$/).length, 1, "waits between attempts");
    const source = readFileSync(
      join(CONTENT, "components", "winfleet-common", "1.1.0", "files", "k", "winfleet", "common", "lib", "Boot.ps1"),
      "utf8",
    );
    assert.match(source, /try \{\s+Start-WinfleetService -Name \$name[\s\S]*?\}\s+catch \{[\s\S]*?\$failed \+= \$name/);
    const reset = facts(component("node-reset"), "reset.ps1");
    const started = reset.commands.find((c) => /^Start-WinfleetNodeServices$/i.test(c.name));
    assert.ok(started?.args.some((a) => a.parameter === "attempts"));
    assert.ok(reset.exits.includes(1), "a run with a service still down exits 1");
    const task = facts(component("node-reset"), "install.ps1").commands.find((c) =>
      /^Set-WinfleetScheduledTask$/i.test(c.name),
    );
    assert.ok(
      task?.args.some((a) => a.parameter === "restartcount"),
      "the task runs again after a failed run",
    );
  });

  it("every template that runs them has the boot task that starts them", () => {
    for (const t of shipped.content.templates) {
      const names = t.packages.map((p) => p.split("_")[0]);
      if (names.includes("kubelet")) assert.ok(names.includes("node-reset"), `${t.name} ${t.version}`);
    }
  });

  it("starts the kubelet and kube-proxy only once the CNI is ready, wherever they are started, under the node lock", () => {
    const services = libFacts("Services.ps1");
    const gate = inFunction(services, "Start-WinfleetService", /^Wait-WinfleetNetworkReady$/);
    const start = inFunction(services, "Start-WinfleetService", /^Start-Service$/);
    assert.equal(gate.length, 1);
    assert.ok((gate[0] ?? Infinity) < Math.min(...start), "the wait comes before Start-Service");
    for (const fn of ["Start-WinfleetService", "Stop-WinfleetService"]) {
      const locked = inFunction(services, fn, /^Enter-WinfleetNodeLock$/);
      assert.equal(locked.length, 1, `${fn} takes the node lock`);
      assert.equal(inFunction(services, fn, /^Exit-WinfleetNodeLock$/).length, 1, `${fn} releases it`);
    }
    const network = libFacts("Network.ps1");
    const list = network.assignments.find((a) => a.variable === "networkservices");
    assert.deepEqual(list?.literal, ["kubelet", "winfleet-kube-proxy"]);
    const ready = network.functions.find((f) => f.name === "Test-WinfleetCalicoReady");
    assert.ok(ready);
    const readyStrings = network.assignments.filter((a) => a.inFunction === undefined).flatMap((a) => a.strings);
    assert.ok(readyStrings.includes("HKLM:\\SOFTWARE\\Tigera\\Calico"), "Calico's recorded boot time");
    assert.ok(
      network.commands.some(
        (c) => c.inFunction === "Test-WinfleetCalicoReady" && c.statementText.includes("'External'"),
      ),
      "the External network",
    );
  });

  it("defers the kubelet and kube-proxy while a node-side Calico is stopped", () => {
    const network = libFacts("Network.ps1");
    const wait = network.functions.find((f) => f.name === "Wait-WinfleetNetworkReady");
    assert.ok(wait?.returnsValue, "Wait-WinfleetNetworkReady says whether the network is ready");
    const services = readFileSync(
      join(
        CONTENT,
        "components",
        "winfleet-common",
        "1.1.0",
        "files",
        "k",
        "winfleet",
        "common",
        "lib",
        "Services.ps1",
      ),
      "utf8",
    );
    assert.match(
      services,
      /if \(\(Test-WinfleetNetworkService -Name \$Name\) -and -not \(Wait-WinfleetNetworkReady\)\) \{\s+Write-WinfleetLog [^\n]+\s+return\s+\}/,
    );
  });

  it("resumes the services that make the pod network before those that wait for it", () => {
    const services = libFacts("Services.ps1");
    assert.ok(inFunction(services, "Resume-WinfleetService", /^Test-WinfleetNetworkService$/).length >= 2);
  });

  it("resets HNS at boot under the node lock, with the HNS cmdlets imported, and makes Calico's next start its first", () => {
    const f = facts(component("node-reset"), "reset.ps1");
    const line = (re: RegExp): number => Math.min(...f.commands.filter((c) => re.test(c.name)).map((c) => c.line));
    assert.ok(line(/^Enter-WinfleetNodeLock$/) < line(/^Stop-WinfleetService$/), "the lock before the first stop");
    assert.ok(line(/^Import-WinfleetHns$/) < line(/^Get-HnsPolicyList$/), "HNS cmdlets imported, not looked for");
    assert.ok(
      !f.commands.some((c) => /^Get-Command$/i.test(c.name)),
      "nothing is skipped when HNS cmdlets are missing",
    );
    assert.ok(
      line(/^Remove-HnsNetwork$/) < line(/^Reset-WinfleetCalicoBootMarker$/) &&
        line(/^Reset-WinfleetCalicoBootMarker$/) < line(/^Start-WinfleetService$/),
    );
    assert.ok(f.commands.some((c) => /^Exit-WinfleetNodeLock$/i.test(c.name)));
  });

  it("imports the HNS cmdlets wherever a script uses them", () => {
    for (const c of shipped.content.components) {
      for (const s of c.scripts) {
        const uses = s.facts.commands.filter((x) => /^(Get|Remove)-Hns/i.test(x.name) && x.inFunction === undefined);
        if (uses.length === 0) continue;
        const imported = s.facts.commands.filter((x) => /^Import-WinfleetHns$/i.test(x.name)).map((x) => x.line);
        assert.ok(imported.length > 0 && Math.min(...imported) < Math.min(...uses.map((u) => u.line)), s.where);
      }
    }
  });

  it("ends the whole process tree of a service that does not stop", () => {
    const services = libFacts("Services.ps1");
    assert.deepEqual(inFunction(services, "Stop-WinfleetService", /^Stop-Process$/), [], "not just the NSSM host");
    assert.equal(inFunction(services, "Stop-WinfleetService", /^Stop-WinfleetProcessTree$/).length, 1);
    const tree = libFacts("Network.ps1");
    assert.ok(
      tree.commands.some(
        (c) =>
          c.inFunction === "Stop-WinfleetProcessTree" &&
          /^Get-CimInstance$/i.test(c.name) &&
          c.args.some((a) => a.text === "Win32_Process"),
      ),
    );
  });
});

describe("what the content leaves writable", () => {
  // Each directory SYSTEM loads code or configuration from, or that goes on the machine PATH.
  const RESTRICTED: readonly (readonly [component: string, path: string, priv?: true])[] = [
    ["winfleet-common", "k"],
    ["containerd", "opt\\cni"],
    ["containerd", "etc\\cni"],
    ["kubelet", "etc\\kubernetes"],
    ["kubelet", "var\\lib\\kubelet\\pki", true],
  ];

  it("gives each an explicit ACL by SID (Users read only; the kubelet's keys SYSTEM and Administrators only)", () => {
    for (const [name, path, priv] of RESTRICTED) {
      const calls = component(name)
        .scripts.flatMap((s) => s.facts.commands)
        .filter((c) => /^Set-WinfleetDirectoryAcl$/i.test(c.name));
      const call = calls.find((c) => c.args.some((a) => a.strings.includes(path) || a.text === path));
      assert.ok(call, `${name} restricts ${path}`);
      assert.equal(
        call.args.some((a) => a.parameter === "private"),
        priv === true,
        `${path} private`,
      );
    }
    // emptyDir volumes live under var\\lib\\kubelet\\pods and inherit its ACL: containers running as
    // ContainerUser (a member of Users) write there, so it keeps (and gets back) the inherited ACL.
    const kubelet = facts(component("kubelet"), "install.ps1");
    assert.ok(
      !kubelet.commands.some(
        (c) =>
          /^Set-WinfleetDirectoryAcl$/i.test(c.name) && c.args.some((a) => a.strings.includes("var\\lib\\kubelet")),
      ),
      "var\\lib\\kubelet is not restricted",
    );
    assert.ok(
      kubelet.commands.some(
        (c) =>
          /^Reset-WinfleetDirectoryAcl$/i.test(c.name) && c.args.some((a) => a.strings.includes("var\\lib\\kubelet")),
      ),
      "an earlier restriction of var\\lib\\kubelet is taken back",
    );
    const rke2 = component("join-rke2")
      .scripts.flatMap((s) => s.facts.commands)
      .filter((c) => /^Set-WinfleetDirectoryAcl$/i.test(c.name));
    assert.equal(rke2.length, 2, "join-rke2 restricts both directories it puts on PATH");
    const acl = libFacts("Files.ps1");
    const sids = acl.assignments.filter((a) => a.inFunction === "Set-WinfleetDirectoryAcl").flatMap((a) => a.strings);
    for (const sid of ["S-1-5-18", "S-1-5-32-544", "S-1-5-32-545"]) assert.ok(sids.includes(sid), sid);
  });

  it("tolerates a Defender that a third-party antivirus disabled", () => {
    const f = libFacts("HostSettings.ps1");
    const inTest = f.commands.filter((c) => c.inFunction === "Test-WinfleetDefender").map((c) => c.name);
    assert.ok(inTest.includes("Get-MpComputerStatus") && inTest.includes("Get-Service"), inTest.join(", "));
  });
});

describe("proxy settings reaching the services without a reboot", () => {
  it("puts the machine's proxy into containerd's, rke2's and the kubelet's own environment and restarts them on a change", () => {
    for (const [name, service] of [
      ["containerd", "containerd"],
      ["join-rke2", "rke2"],
    ] as const) {
      const f = facts(component(name), "install.ps1");
      const set = f.commands.find(
        (c) => /^Set-WinfleetServiceProxyEnvironment$/i.test(c.name) && c.args.some((a) => a.strings.includes(service)),
      );
      assert.ok(set, `${name} sets ${service}'s proxy environment`);
      assert.ok(
        f.assignments.some(
          (a) =>
            a.variable === "proxychanged" &&
            a.valueCommand === "Set-WinfleetServiceProxyEnvironment" &&
            a.line === set.line,
        ),
      );
      const source = readFileSync(
        join(
          CONTENT,
          "components",
          component(name).key.replace("_", "/"),
          "files",
          "k",
          "winfleet",
          name,
          "install.ps1",
        ),
        "utf8",
      );
      assert.match(
        source,
        new RegExp(
          `if \\(\\([^)]*-or \\$proxyChanged\\) -and \\(Get-Service -Name '${service}'\\)\\.Status -eq 'Running'\\) \\{\\s+Restart-WinfleetService -Name '${service}'`,
        ),
        `${name} restarts ${service} when it changed`,
      );
    }
    const kubelet = facts(component("kubelet"), "install.ps1").commands.find((c) =>
      /^Set-WinfleetHostedService$/i.test(c.name),
    );
    assert.ok(kubelet?.args.some((a) => a.parameter === "environment" && a.variables.includes("environment")));
    assert.ok(
      facts(component("kubelet"), "install.ps1").assignments.some(
        (a) => a.variable === "environment" && a.valueCommand === "Get-WinfleetProxyEnvironment",
      ),
      "the kubelet's environment starts from the machine's proxy",
    );
    const prereqs = facts(component("prereqs"), "install.ps1");
    const loop = prereqs.commands.find((c) => /^Set-WinfleetServiceProxyEnvironment$/i.test(c.name));
    assert.ok(loop, "prereqs updates the services that exist when the proxy changes");
    const services = prereqs.assignments.find((a) => a.variable === "service" && a.strings.includes("containerd"));
    assert.deepEqual(services?.strings, ["containerd", "rke2", "kubelet"]);
    // containerd and the kubelet run under NSSM (their environment is NSSM's AppEnvironmentExtra); rke2 is its own.
    assert.match(
      readFileSync(
        join(CONTENT, "components", "prereqs", "1.1.0", "files", "k", "winfleet", "prereqs", "install.ps1"),
        "utf8",
      ),
      /@\('containerd', \$true\), @\('rke2', \$false\), @\('kubelet', \$true\)/,
    );
  });
});
