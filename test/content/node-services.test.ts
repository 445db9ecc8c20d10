/**
 * How the node's Kubernetes services run, read from the scripts' parse trees:
 * kube-proxy under its own identity, its access proven by
 * SelfSubjectAccessReview before the service is registered; and the cluster
 * side (ClusterJoin's renders) that provisions that identity with least
 * privilege and hands its token over as a secret.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { type AnalyzedComponent, type AnalyzedContent, analyzeContent } from "../../agent/content/analysis";
import type { ScriptFacts } from "../../agent/content/powershell-facts";
import { KUBE_PROXY_ACCOUNT, KUBE_PROXY_TOKEN_SECRET, renderKubeProxyAccess } from "../../components/cluster-render";
import { validateObject } from "../../components/cluster-render.test";

const CONTENT = join(__dirname, "..", "..", "content");
let content: AnalyzedContent;
before(async () => {
  content = await analyzeContent(CONTENT);
});

const component = (name: string): AnalyzedComponent => {
  const c = content.components.find((x) => x.metadata.name === name);
  assert.ok(c, `no component ${name}`);
  return c;
};
const facts = (c: AnalyzedComponent, leaf: string): ScriptFacts => {
  const s = c.scripts.find((x) => x.hostPath.toLowerCase().endsWith(`\\${leaf.toLowerCase()}`));
  assert.ok(s, `${c.key} has no ${leaf}`);
  return s.facts;
};
const firstLine = (f: ScriptFacts, name: RegExp): number => Math.min(...f.commands.filter((c) => name.test(c.name)).map((c) => c.line));

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
    const reviews = f.commands.filter((c) => /^Invoke-WinfleetNative$/i.test(c.name) && c.args.some((a) => a.strings.includes("auth")) && c.args.some((a) => a.strings.includes("can-i")));
    assert.equal(reviews.length, 1, "one kubectl auth can-i call");
    const review = reviews[0];
    assert.ok(review);
    assert.ok(review.args.some((a) => a.text.includes("--kubeconfig=$kubeconfig")), "with kube-proxy's own kubeconfig");
    const resources = f.assignments.filter((a) => a.strings.some((s) => /endpointslices\.discovery\.k8s\.io/.test(s))).flatMap((a) => a.strings);
    for (const needed of ["list services", "watch services", "list endpointslices.discovery.k8s.io", "watch endpointslices.discovery.k8s.io"]) {
      assert.ok(resources.includes(needed) || f.commands.some((c) => c.statementText.includes(`'${needed}'`)), needed);
    }
    assert.ok(review.line < firstLine(f, /^Set-WinfleetHostedService$/i), "the review comes before the service is registered");
    const refusal = f.emissions.find((e) => e.kind === "throw" && /may not: /.test(e.text));
    assert.ok(refusal && refusal.line > review.line && refusal.line < firstLine(f, /^Set-WinfleetHostedService$/i), "a denied review stops the install");
    assert.match(refusal.text, /KUBE_PROXY_TOKEN/);
    assert.match(refusal.text, /KUBE_PROXY_KUBECONFIG/);
  });

  it("writes its own kubeconfig from KUBE_PROXY_TOKEN, as a secret file", () => {
    const f = facts(component("kube-proxy"), "install.ps1");
    const built = f.commands.find((c) => /^ConvertTo-WinfleetKubeconfig$/i.test(c.name));
    assert.ok(built?.args.some((a) => a.parameter === "token" && a.variables.includes("proxytoken")));
    assert.ok(f.commands.some((c) => /^Set-WinfleetSecretFile$/i.test(c.name) && c.args.some((a) => a.variables.includes("proxyconfig"))));
  });
});

describe("ClusterJoin's kube-proxy access", () => {
  const objects = renderKubeProxyAccess("winfleet-system");

  it("validates against the Kubernetes OpenAPI schema", () => {
    for (const o of objects) validateObject(o);
  });

  it("is a service account with a token Secret the token controller fills", () => {
    const secret = objects.find((o) => o.kind === "Secret") as unknown as { metadata: { name: string; annotations: Record<string, string> }; type: string };
    assert.equal(secret.metadata.name, KUBE_PROXY_TOKEN_SECRET);
    assert.equal(secret.type, "kubernetes.io/service-account-token");
    assert.equal(secret.metadata.annotations["kubernetes.io/service-account.name"], KUBE_PROXY_ACCOUNT);
    assert.ok(objects.some((o) => o.kind === "ServiceAccount" && o.metadata.name === KUBE_PROXY_ACCOUNT));
  });

  it("grants what kube-proxy reads and the events it writes, nothing more", () => {
    const role = objects.find((o) => o.kind === "ClusterRole") as unknown as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] };
    const grants = role.rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}${g ? `.${g}` : ""}`)))).sort();
    for (const needed of ["list services", "watch services", "list endpointslices.discovery.k8s.io", "watch endpointslices.discovery.k8s.io", "get nodes", "create events.events.k8s.io"]) assert.ok(grants.includes(needed), needed);
    for (const g of grants) assert.match(g, /^(get|list|watch) (services|nodes|endpointslices\.discovery\.k8s\.io)$|^(create|patch|update) events(\.events\.k8s\.io)?$/, g);
    const binding = objects.find((o) => o.kind === "ClusterRoleBinding") as unknown as { subjects: { kind: string; name: string }[]; roleRef: { name: string } };
    assert.deepEqual(binding.subjects.map((s) => `${s.kind}/${s.name}`), [`ServiceAccount/${KUBE_PROXY_ACCOUNT}`]);
    assert.equal(binding.roleRef.name, "winfleet:kube-proxy");
  });
});
