/**
 * The move from content 1.0.0 (test/fixtures/content-1.0.0: Calico 3.29.2
 * installed on the node as Windows services) to the current templates (Calico
 * 3.31 in the operator's HostProcess containers) is a content upgrade like any
 * other: a host records 1.0.0 exactly as an apply that converged to it does
 * (each version's metadata and Ignition file, the journal), and
 * `winfleet-agent plan` moves it to the current template: every changed
 * component upgraded in place, Calico's node services removed before the
 * files phase takes away what they ran, its new install after the kubelet's
 * (which brings the kubectl it labels the node with) and before kube-proxy's,
 * and no reboot on the way.
 */
import assert from "node:assert/strict";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Catalog, loadCatalog } from "../../agent/content";
import { emptyJournal, writeJournal } from "../../agent/lifecycle/journal";
import { record } from "../../agent/lifecycle/store";
import { pickTemplate } from "../../agent/lifecycle";
import { agent, hostTree, tempDir } from "../support";
import { CONTENT } from "./shipped";

const CONTENT_1_0_0 = join(__dirname, "..", "fixtures", "content-1.0.0");

/** What `winfleet-agent plan --json` prints. */
interface PlanOutput {
  template: { name: string; version: string };
  missingVariables: string[];
  unfinished: unknown;
  steps: {
    step: number;
    kind: string;
    phase: string;
    component: string;
    version: string;
    from?: string;
    section?: string;
    command?: string;
    isolated?: boolean;
    title: string;
  }[];
}

/** The variables a kubeadm node is given (the stack's, and what the agent's config adds). */
const VARIABLES: Readonly<Record<string, string>> = {
  KUBE_API_SERVER: "https://10.0.0.10:6443",
  KUBE_CA_CERT_HASH: `sha256:${"ab".repeat(32)}`,
  KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef",
  KUBE_PROXY_TOKEN: "a-token",
  KUBE_SERVICE_CIDR: "10.96.0.0/12",
  KUBE_CLUSTER_DNS: "10.96.0.10",
  KUBE_CLUSTER_CIDR: "10.244.0.0/16",
  CSI_PROXY_SHA256: "0".repeat(64),
};

let old: Catalog;
let current: Catalog;
before(async () => {
  [old, current] = await Promise.all([loadCatalog(CONTENT_1_0_0), loadCatalog(CONTENT)]);
});

/** A root on which `template` 1.0.0 converged: its components recorded and in the journal, as apply leaves them. */
async function hostOn(template: string): Promise<string> {
  const root = tempDir("upgrade-plan-");
  const t = pickTemplate(old, { name: template, version: "1.0.0" });
  const at = "2026-01-05T10:00:00.000Z";
  const installed = [];
  for (const ref of t.packages) {
    const c = old.components.get(ref);
    assert.ok(c, `1.0.0 has ${ref}`);
    await record(root, c);
    installed.push({ name: c.metadata.name, version: c.metadata.version, since: at });
  }
  await writeJournal(root, {
    ...emptyJournal(),
    installed,
    applied: { template: { name: t.name, version: t.version }, contentDigest: old.digest, variables: {}, at },
  });
  return root;
}

async function plan(root: string, template: string): Promise<PlanOutput> {
  const vars = Object.entries(VARIABLES).flatMap(([k, v]) => ["--var", `${k}=${v}`]);
  const r = await agent([
    "plan",
    "--content",
    CONTENT,
    "--root",
    root,
    "--node-name",
    "win-node-1",
    "--template",
    template,
    "--json",
    ...vars,
  ]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as PlanOutput;
}

describe("winfleet-agent plan from content 1.0.0 to the current templates", () => {
  const roots: string[] = [];
  after(() => {
    for (const r of roots) rmSync(r, { recursive: true, force: true });
  });

  for (const name of ["win2019", "win2022", "win2025"]) {
    it(`${name}: every changed component upgraded in place, Calico moved to the operator's containers, no reboot`, async () => {
      const root = await hostOn(name);
      roots.push(root);
      const before = hostTree(root);
      const target = pickTemplate(current, { name });
      const p = await plan(root, `${name}@${target.version}`);
      assert.deepEqual(hostTree(root), before, "plan changed the host");
      assert.deepEqual(p.template, { name, version: target.version });
      assert.notEqual(target.version, "1.0.0");
      assert.deepEqual(p.missingVariables, []);
      assert.equal(p.unfinished, null);

      assert.deepEqual(
        p.steps.filter((s) => s.kind === "reboot").map((s) => s.title),
        [],
        "the move needs no reboot (the node's one reboot was its first install's)",
      );
      assert.deepEqual(
        p.steps.filter((s) => s.phase === "uninstall"),
        [],
        "no component is dropped, and no old version goes through its uninstall",
      );

      // Every component whose version changed is upgraded in place: pre_upgrade, its files, post_upgrade.
      const oldTemplate = pickTemplate(old, { name, version: "1.0.0" });
      const oldVersion = new Map(
        oldTemplate.packages.map((ref) => {
          const c = old.components.get(ref);
          return [c?.metadata.name ?? ref, c?.metadata.version ?? ""];
        }),
      );
      for (const ref of target.packages) {
        const c = current.components.get(ref);
        assert.ok(c, ref);
        const { name: component, version } = c.metadata;
        const from = oldVersion.get(component);
        const own = p.steps.filter((s) => s.component === component);
        if (from === version) {
          assert.deepEqual(own, [], `${component} ${version} is unchanged`);
          continue;
        }
        assert.ok(from, `${component} was on 1.0.0`);
        const files = own.find((s) => s.kind === "files");
        assert.equal(files?.from, from, `${component}: files from ${from}`);
        assert.equal(files.version, version);
        assert.ok(
          own.some((s) => s.section === "post_upgrade"),
          `${component} ${from} -> ${version} runs its post_upgrade`,
        );
        assert.ok(!own.some((s) => s.section === "install" || s.section === "uninstall"), component);
      }

      // Calico: the new version's pre_upgrade removes the node-side services before the files phase removes
      // what they ran; its install runs in post_upgrade, isolated (it drops the old HNS networks).
      const calico = p.steps.filter((s) => s.component === "calico");
      assert.deepEqual(
        calico.map((s) => `${s.phase}:${s.kind}:${s.from ?? ""}>${s.version}`),
        ["pre_upgrade:command:3.29.2>3.31.7", "files:files:3.29.2>3.31.7", "post_upgrade:command:3.29.2>3.31.7"],
      );
      assert.match(calico[0]?.command ?? "", /Remove-WinfleetService -Name 'CalicoFelix'/);
      assert.match(calico[0]?.command ?? "", /Remove-WinfleetService -Name 'CalicoNode'/);
      assert.match(calico[2]?.command ?? "", /calico\\\\install\.ps1|calico\\install\.ps1/);
      assert.equal(calico[2]?.isolated, true);

      // The post_upgrade order: the kubelet (kubectl) and the join before Calico, kube-proxy after it.
      const post = p.steps.filter((s) => s.phase === "post_upgrade").map((s) => s.component);
      const at = (c: string): number => post.indexOf(c);
      assert.ok(at("kubelet") >= 0 && at("kubelet") < at("calico"), post.join(", "));
      assert.ok(at("join-kubeadm") < at("calico"), post.join(", "));
      assert.ok(at("calico") < at("kube-proxy"), post.join(", "));
      // kube-proxy's pre_upgrade holds the service under both its old name and its new one.
      const kubeProxyPre = p.steps.find((s) => s.component === "kube-proxy" && s.phase === "pre_upgrade");
      assert.match(kubeProxyPre?.command ?? "", /Suspend-WinfleetService -Name 'kube-proxy'/);
      assert.match(kubeProxyPre?.command ?? "", /Suspend-WinfleetService -Name 'winfleet-kube-proxy'/);
    });
  }

  it("plans nothing more once the host records the current template", async () => {
    const root = tempDir("upgrade-plan-");
    roots.push(root);
    const t = pickTemplate(current, { name: "win2022" });
    const at = "2026-01-05T10:00:00.000Z";
    const installed = [];
    for (const ref of t.packages) {
      const c = current.components.get(ref);
      assert.ok(c, ref);
      await record(root, c);
      installed.push({ name: c.metadata.name, version: c.metadata.version, since: at });
    }
    await writeJournal(root, {
      ...emptyJournal(),
      installed,
      applied: { template: { name: t.name, version: t.version }, contentDigest: current.digest, variables: {}, at },
    });
    const p = await plan(root, `win2022@${t.version}`);
    assert.deepEqual(p.steps, []);
    assert.deepEqual(readdirSync(join(root, ".winfleet")).sort(), ["components", "journal.json"]);
  });
});
