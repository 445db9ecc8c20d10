/**
 * The Windows templates and components against the contracts other parts
 * build on: which builds each template fits, the join and broker contracts
 * the stack fills in, the reboot and upgrade conventions, and where every
 * download's digest comes from. Read from the content's metadata and its
 * scripts' parse trees; no Windows host needed.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { BROKER_CONFIG, NODE_KUBECONFIG } from "../../components/pool-render";
import {
  type AnalyzedComponent,
  type AnalyzedContent,
  analyzeContent,
  stringsOfVariable,
} from "../../agent/content/analysis";
import { evaluatePath, sectionEffects } from "../../agent/content/host-effects";
import { shippedContent } from "./shipped";

const shipped = shippedContent();
const { component, script } = shipped;
// The content-root-relative path a script assigns to $variable, as C:\ sees it.
const hostPathOf = (c: AnalyzedComponent, leaf: string, variable: string): string => {
  const s = script(c, leaf);
  const a = s.facts.assignments.find((x) => x.variable === variable.toLowerCase());
  assert.ok(a, `${leaf} assigns no $${variable}`);
  const p = evaluatePath(s.facts, { text: a.valueText, strings: a.strings, variables: a.variables });
  assert.ok(p, `$${variable} in ${leaf} does not resolve to a path`);
  return `C:${p.replace(/\//g, "\\")}`;
};

describe("Windows templates", () => {
  const BUILDS = { win2019: 17763, win2022: 20348, win2025: 26100 } as const;

  it("each fits exactly its Windows Server build and takes a stock server to a node", () => {
    for (const [name, build] of Object.entries(BUILDS)) {
      const t = shipped.content.templates.find((x) => x.name === name);
      assert.ok(t, name);
      assert.deepEqual(t.os, [build]);
      const names = t.packages.map((p) => p.split("_")[0]);
      for (const needed of [
        "winfleet-common",
        "prereqs",
        "containerd",
        "kubelet",
        "kube-proxy",
        "calico",
        "join-kubeadm",
        "windows-exporter",
        "csi-proxy",
        "winfleet-broker",
        "node-reset",
      ])
        assert.ok(names.includes(needed), `${name} lacks ${needed}`);
    }
  });

  it("pins every component at a version that exists and is PowerShell", () => {
    const keys = new Set(shipped.content.components.map((c) => c.key));
    for (const t of shipped.content.templates.filter((x) => x.name !== "sandbox"))
      for (const p of t.packages) assert.ok(keys.has(p), `${t.name} names ${p}`);
  });

  it("installs the module first and removes it last, and the join before the CNI and kube-proxy", () => {
    const priority = (name: string, section: "install" | "uninstall"): number =>
      component(name).metadata[section].priority;
    for (const other of shipped.content.components.filter((c) => c.metadata.name !== "winfleet-common")) {
      assert.ok(priority("winfleet-common", "install") < other.metadata.install.priority, other.key);
      assert.ok(priority("winfleet-common", "uninstall") > other.metadata.uninstall.priority, other.key);
    }
    assert.ok(priority("prereqs", "install") < priority("containerd", "install"));
    assert.ok(priority("containerd", "install") < priority("kubelet", "install"));
    assert.ok(priority("kubelet", "install") < priority("join-kubeadm", "install"));
    assert.ok(priority("join-kubeadm", "install") < priority("calico", "install"));
    assert.ok(priority("calico", "install") < priority("kube-proxy", "install"));
    assert.ok(priority("kube-proxy", "uninstall") < priority("kubelet", "uninstall"));
    assert.ok(priority("kubelet", "uninstall") < priority("containerd", "uninstall"));
  });

  it("leaves the RKE2 template to be chosen by name: RKE2 brings its own runtime, kubelet and CNI", () => {
    const t = shipped.content.templates.find((x) => x.name === "rke2-windows");
    assert.ok(t);
    assert.equal(t.os, undefined);
    const names = t.packages.map((p) => p.split("_")[0]);
    assert.ok(names.includes("join-rke2"));
    for (const clash of ["containerd", "kubelet", "kube-proxy", "calico", "join-kubeadm"])
      assert.ok(!names.includes(clash), clash);
  });
});

describe("contracts with the stack", () => {
  it("join-kubeadm and join-rke2 read the join variables, with the tokens secret", () => {
    const kubeadm = component("join-kubeadm").metadata.variables;
    assert.deepEqual(
      Object.keys(kubeadm)
        .filter((k) => k.startsWith("KUBE_"))
        .sort(),
      ["KUBE_API_SERVER", "KUBE_BOOTSTRAP_TOKEN", "KUBE_CA_CERT_HASH"],
    );
    assert.equal(kubeadm.KUBE_BOOTSTRAP_TOKEN?.secret, true);
    assert.equal(kubeadm.KUBE_API_SERVER?.secret, false);
    const rke2 = component("join-rke2").metadata.variables;
    assert.equal(rke2.RKE2_TOKEN?.secret, true);
    assert.equal(rke2.RKE2_SERVER?.required, true);
    for (const c of [component("kubelet"), component("join-rke2")]) {
      assert.ok(c.metadata.variables.KUBE_NODE_LABELS, c.key);
      assert.ok(c.metadata.variables.KUBE_REGISTER_TAINT, c.key);
    }
  });

  it("registers the os=windows:NoSchedule taint when KUBE_REGISTER_TAINT is true", () => {
    for (const [name, leaf] of [
      ["kubelet", "install.ps1"],
      ["join-rke2", "install.ps1"],
    ] as const) {
      const s = script(component(name), leaf);
      assert.ok(
        s.facts.commands.some(
          (c) => /Get-WinfleetVariable/i.test(c.name) && c.args.some((a) => a.strings.includes("KUBE_REGISTER_TAINT")),
        ),
        name,
      );
      assert.ok(
        s.facts.assignments.some((a) =>
          a.strings.some((x) => /^(os|windows|NoSchedule|os=windows:NoSchedule)$/.test(x)),
        ),
        name,
      );
    }
  });

  it("waits for the node kubeconfig where the agent config says it is", () => {
    assert.equal(hostPathOf(component("join-kubeadm"), "install.ps1", "kubeconfig"), NODE_KUBECONFIG.kubeadm);
    assert.equal(hostPathOf(component("join-rke2"), "install.ps1", "kubeconfig"), NODE_KUBECONFIG.rke2);
  });

  it("writes the broker config where the agent reads it, in wins's keys", () => {
    const broker = component("winfleet-broker");
    assert.equal(hostPathOf(broker, "install.ps1", "configFile"), BROKER_CONFIG);
    const s = script(broker, "install.ps1");
    const config = s.facts.assignments.find((a) => a.variable === "config");
    assert.match(config?.valueText ?? "", /white_list = \[ordered\]@\{ processPaths = .*; proxyPorts = /);
    assert.equal(broker.metadata.variables.BROKER_PROXY_PORTS?.default, "9796");
  });

  it("exposes windows_exporter on 9796, the port the broker's proxy allows", () => {
    assert.match(
      component("windows-exporter").metadata.variables.WINDOWS_EXPORTER_LISTEN_ADDRESS?.default ?? "",
      /:9796$/,
    );
  });
});

describe("lifecycle conventions", () => {
  it("asks for a reboot (exit 3010) wherever a Windows feature changes", () => {
    for (const c of shipped.content.components) {
      for (const s of c.scripts) {
        const changesFeature = s.facts.commands.some((x) => /^(Enable|Disable)-WinfleetFeature$/i.test(x.name));
        if (changesFeature)
          assert.ok(s.facts.exits.includes(3010), `${s.where} changes a Windows feature but never exits 3010`);
      }
    }
    assert.ok(
      script(component("prereqs"), "install.ps1").facts.commands.some(
        (x) => x.name === "Enable-WinfleetFeature" && x.args.some((a) => a.strings.includes("Containers")),
      ),
    );
  });

  it("gives every component all four sections, and suspends its services before an upgrade", () => {
    for (const c of shipped.content.components) {
      assert.ok(c.metadata.install.commands.length > 0, `${c.key} install`);
      assert.ok(c.metadata.uninstall.commands.length > 0, `${c.key} uninstall`);
      assert.ok(c.metadata.post_upgrade.commands.length > 0, `${c.key} post_upgrade`);
      const services = sectionEffects(c, "install")
        .filter((e) => e.kind === "service" && e.action === "create")
        .map((e) => e.key);
      if (services.length === 0) continue;
      const suspended = c.sections.pre_upgrade.commands.flatMap((x) =>
        x.facts.commands
          .filter((y) => y.name === "Suspend-WinfleetService")
          .flatMap((y) => y.args.flatMap((a) => a.strings)),
      );
      assert.ok(
        suspended.some((s) => services.includes(s)),
        `${c.key} creates ${services.join(", ")} but its pre_upgrade suspends none of them`,
      );
    }
  });

  it("runs components that reset HNS networking in a process of their own", () => {
    for (const c of shipped.content.components) {
      const disrupts = c.sections.uninstall.scripts.some((s) =>
        s.facts.commands.some(
          (x) =>
            /^Remove-HnsNetwork$/i.test(x.name) ||
            (x.operator !== undefined &&
              stringsOfVariable(s.facts, x.name).some((v) => /rke2-uninstall\.ps1$/i.test(v))),
        ),
      );
      if (disrupts) assert.equal(c.metadata.isolated, true, `${c.key} resets HNS but is not isolated`);
    }
    assert.equal(component("calico").metadata.isolated, true);
    assert.equal(component("join-rke2").metadata.isolated, true);
  });

  it("registers a startup task that resets HNS and restarts the node services", () => {
    const reset = component("node-reset");
    assert.ok(
      sectionEffects(reset, "install").some((e) => e.kind === "scheduled task" && e.key === "winfleet-node-reset"),
    );
    const s = script(reset, "reset.ps1");
    for (const cmd of [
      "Remove-HnsNetwork",
      "Remove-HnsEndpoint",
      "Remove-HnsPolicyList",
      "Stop-WinfleetService",
      "Set-WinfleetHnsResetDone",
      "Start-WinfleetNodeServices",
    ])
      assert.ok(
        s.facts.commands.some((c) => c.name === cmd),
        cmd,
      );
  });
});

/** The content as 1.0.0 shipped it, whose calico component downloaded Calico's zip with a digest from the stack. */
const CONTENT_1_0_0 = join(__dirname, "..", "fixtures", "content-1.0.0");

/**
 * The only downloads whose digest the stack provides (a variable, required, so an unset one fails
 * closed), each because no value published beside the release has been pinned here.
 */
const DIGEST_FROM_THE_STACK: Readonly<Record<string, string>> = {
  "csi-proxy": "the build AKS ships: neither kubernetes-csi/csi-proxy nor AgentBaker publishes a checksum",
  rke2: "RKE2 publishes sha256sum-amd64.txt beside the release, but no repository commits it",
};

/** `component/artifact` for each download of `content` whose digest is a variable, not a literal. */
const digestsFromTheStack = (content: AnalyzedContent): string[] =>
  content.components.flatMap((c) =>
    c.artifacts.filter((a) => a.sha256Variable !== undefined).map((a) => `${c.metadata.name}/${a.name}`),
  );

describe("downloads", () => {
  let released: AnalyzedContent | undefined;
  before(async () => {
    released = await analyzeContent(CONTENT_1_0_0);
  });

  it("pins every digest a release publishes: only csi-proxy's and RKE2's come from the stack (1.0.0 left Calico's zip to it)", () => {
    assert.deepEqual(digestsFromTheStack(shipped.content).sort(), ["csi-proxy/csi-proxy", "join-rke2/rke2"]);
    for (const a of shipped.content.components.flatMap((c) => c.artifacts.filter((x) => x.sha256Variable)))
      assert.ok(DIGEST_FROM_THE_STACK[a.name], a.name);
    // What the review found: Calico's release publishes SHA256SUMS, yet 1.0.0 took the zip's digest from a variable.
    assert.ok(released, "1.0.0 analysed");
    assert.deepEqual(digestsFromTheStack(released).sort(), [
      "calico/calico-windows",
      "csi-proxy/csi-proxy",
      "join-rke2/rke2",
    ]);
  });

  it("downloads nothing of Calico's on the node: its containers' images are the cluster's operator's", () => {
    const calico = component("calico");
    assert.deepEqual(calico.artifacts, []);
    assert.equal(calico.artifactsWhere, undefined);
    for (const s of calico.scripts)
      assert.ok(!s.facts.commands.some((x) => /^(Get|Expand)-WinfleetArtifact$/i.test(x.name)), s.where);
  });

  it("pins each digest in the content, or names the variable the stack sets it in, and says where it comes from", () => {
    const downloading = shipped.content.components.filter((c) =>
      c.scripts.some((s) => s.facts.commands.some((x) => x.name === "Get-WinfleetArtifact")),
    );
    assert.ok(downloading.length >= 7);
    for (const c of downloading) {
      assert.ok(c.artifacts.length > 0, `${c.key} downloads but has no artifacts.json`);
      for (const a of c.artifacts) {
        assert.match(a.url, /^https:\/\//);
        if (a.sha256Variable)
          assert.equal(
            c.metadata.variables[a.sha256Variable]?.required,
            true,
            `${c.key}: ${a.sha256Variable} must be required`,
          );
      }
    }
  });

  it("asks every artifact it downloads by a name its artifacts.json has", () => {
    for (const c of shipped.content.components) {
      for (const s of c.scripts) {
        for (const call of s.facts.commands.filter((x) => x.name === "Get-WinfleetArtifact")) {
          const name = call.args.find((a) => a.parameter === "name")?.strings[0];
          assert.ok(
            name && c.artifacts.some((a) => a.name === name),
            `${s.where}:${call.line} asks for ${name ?? "?"}`,
          );
        }
      }
    }
  });

  it("pins the published values: containerd 1.7.25, Kubernetes 1.34.7, windows_exporter 0.31.8, NSSM 2.24", () => {
    const pins = Object.fromEntries(
      shipped.content.components.flatMap((c) =>
        c.artifacts.map((a) => [`${a.name}@${a.version}`, a.sha256 ?? a.sha512 ?? `var:${a.sha256Variable ?? ""}`]),
      ),
    );
    assert.equal(pins["containerd@1.7.25"], "ec819a29d81b52a1aa8ffd995751639de7102ac08d54a0248d1d1484809e0460");
    assert.equal(
      pins["kubernetes-node@1.34.7"],
      "fdc3bbe9e42c21fc6482b73de21db86c50eeb58e9f9270cb9372cbad189624c5a954a9102893006af3d79686581cbdeb9942ef571e422e6ea08980ed1ca70aee",
    );
    assert.equal(pins["windows-exporter@0.31.8"], "03bb0fe80b8ad0b4e39606b96c4c5cc56b1f766760011ea2b00111157c6ef077");
    assert.equal(pins["nssm@2.24"], "727d1e42275c605e0f04aba98095c38a8e1e46def453cdffce42869428aa6743");
    assert.equal(pins["rke2@1.34.7+rke2r1"], "var:RKE2_SHA256");
  });
});
