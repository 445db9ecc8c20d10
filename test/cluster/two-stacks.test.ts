/**
 * Two stacks, one cluster, through the real engine: the program deploys two stacks (each a pool
 * of the same name, joining the same control plane) side by side. Whatever lies outside a
 * stack's namespace carries the stack's name (ClusterRoles, bindings, the Role in kube-system),
 * each stack has a namespace of its own by default, and its upgraders select its own nodes by
 * the stack's label, and its node tokens' ids are derived from its own name; so destroying one
 * leaves the other exactly as it deployed it, its identities and node tokens still granted what
 * they need.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient } from "../../agent/cluster/kube-client";
import { enginesOrSkip, pulumiProject, type PulumiProject, startTestControlPlane } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");

function stackYaml(cp: ControlPlane, name: string, tokenId: string): string {
  return [
    "config:",
    "  winfleet:fleet:",
    "    cluster:",
    `      name: ${name}`,
    "      join:",
    "        method: kubeadm",
    `        apiServer: ${cp.server}`,
    `        caCertHash: ${cp.caCertHash}`,
    `        tokenId: ${tokenId}`,
    "        tokenSecret: bootstrapTokenSecret",
    "    content:",
    "      dir: content",
    "      template: sandbox",
    "      templateVersion: 1.0.0",
    "    agent:",
    "      version: 0.1.0",
    "      bundle:",
    "        url: https://artifacts.example.test/winfleet-agent-0.1.0.tgz",
    `        sha256: "${"0".repeat(64)}"`,
    "    pools:",
    "      - name: win",
    "        kind: local",
    "    upgrader:",
    "      image: winfleet-agent:0.1.0",
    "",
  ].join("\n");
}

type Named = { metadata: { name: string } };
type DaemonSet = Named & { spec: { template: { spec: { nodeSelector: Record<string, string> } } } };

describe("two stacks in one cluster", { skip: typeof engines === "string" ? engines : false, timeout: 900_000 }, () => {
  let cp: ControlPlane;
  let admin: KubeClient;
  let project: PulumiProject;
  /** A stack's bootstrap token Secrets in the cluster. */
  const tokens = async (stack: string) =>
    (
      await admin.get<{ items: (Named & { data: Record<string, string> })[] }>(
        `/api/v1/namespaces/kube-system/secrets?labelSelector=${encodeURIComponent(`winfleet.io/stack=${stack}`)}&fieldSelector=${encodeURIComponent("type=bootstrap.kubernetes.io/token")}`,
      )
    ).items;
  const ok = async (args: string[]) => {
    const r = await project.pulumi(args);
    assert.equal(
      r.code,
      0,
      `pulumi ${args.join(" ")} exited ${r.code}:\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-3000)}`,
    );
    return r;
  };

  before(async () => {
    if (typeof engines === "string") return;
    cp = await startTestControlPlane(engines);
    admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
    project = pulumiProject(engines, { KUBECONFIG: cp.adminKubeconfig });
    for (const [stack, token] of [
      ["alpha", "alpha1"],
      ["beta", "beta01"],
    ] as const) {
      project.writeStack(stack, stackYaml(cp, stack, token));
      await ok(["stack", "init", stack, "--secrets-provider", "passphrase"]);
      await ok([
        "config",
        "set",
        "-s",
        stack,
        "--secret",
        "winfleet:bootstrapTokenSecret",
        `${token}secret00000`.slice(0, 16),
      ]);
    }
  });

  after(async () => {
    project?.dispose();
    await cp?.stop();
  });

  it("deploys both: every cluster-scoped name and the default namespace carry the stack's name", async () => {
    await ok(["up", "-s", "alpha", "--yes", "--skip-preview"]);
    await ok(["up", "-s", "beta", "--yes", "--skip-preview"]);
    const roles = (await admin.get<{ items: Named[] }>("/apis/rbac.authorization.k8s.io/v1/clusterroles")).items
      .map((r) => r.metadata.name)
      .filter((n) => n.startsWith("winfleet"));
    assert.deepEqual(roles.sort(), [
      "winfleet:alpha:calico-node",
      "winfleet:alpha:kube-proxy",
      "winfleet:alpha:node-approver",
      "winfleet:beta:calico-node",
      "winfleet:beta:kube-proxy",
      "winfleet:beta:node-approver",
    ]);
    // Hosts of the same names in each stack: each stack's tokens for them have ids of their own.
    const [alphaIds = [], betaIds = []] = await Promise.all(
      ["alpha", "beta"].map(async (s) => (await tokens(s)).map((t) => t.metadata.name)),
    );
    assert.equal(alphaIds.length, 3, "a token per host");
    assert.equal(betaIds.length, 3, "a token per host");
    assert.deepEqual(
      alphaIds.filter((id) => betaIds.includes(id)),
      [],
      "no id shared",
    );
    for (const ns of ["winfleet-alpha", "winfleet-beta"])
      assert.ok(await admin.getOrUndefined(`/api/v1/namespaces/${ns}`), ns);
    const selectors = await Promise.all(
      ["alpha", "beta"].map(
        async (s) =>
          (await admin.get<{ items: DaemonSet[] }>(`/apis/apps/v1/namespaces/winfleet-${s}/daemonsets`)).items[0]?.spec
            .template.spec.nodeSelector,
      ),
    );
    assert.deepEqual(
      selectors.map((s) => [s?.["winfleet.io/pool"], s?.["winfleet.io/stack"]]),
      [
        ["win", "alpha"],
        ["win", "beta"],
      ],
      "a pool of the same name in each stack selects its own stack's nodes",
    );
  });

  it("destroying one stack leaves the other as deployed, its identities still granted", async () => {
    await ok(["destroy", "-s", "beta", "--yes", "--skip-preview"]);
    assert.equal(
      await admin.getOrUndefined("/api/v1/namespaces/winfleet-beta/serviceaccounts/winfleet-kube-proxy"),
      undefined,
    );
    await ok(["preview", "-s", "alpha", "--expect-no-changes"]);
    await ok(["refresh", "-s", "alpha", "--yes", "--expect-no-changes"]);
    const sa = (name: string) => `system:serviceaccount:winfleet-alpha:${name}`;
    const groups = ["system:serviceaccounts", "system:serviceaccounts:winfleet-alpha", "system:authenticated"];
    assert.equal(await admin.allowed(sa("winfleet-kube-proxy"), groups, { resource: "services", verb: "list" }), true);
    assert.equal(await admin.allowed(sa("winfleet-calico-node"), groups, { resource: "nodes", verb: "watch" }), true);
    assert.deepEqual(await tokens("beta"), [], "beta's tokens went with it");
    // alpha's node token, as the API server authenticates it, may still ask for its certificate; alpha's approver
    // still reads the name it was made for.
    const [alpha] = await tokens("alpha");
    assert.ok(alpha);
    const field = (k: string) => Buffer.from(alpha.data[k] ?? "", "base64").toString("utf8");
    const review = await admin
      .as({ token: `${field("token-id")}.${field("token-secret")}` })
      .post<{ status: { allowed: boolean } }>("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: {
          resourceAttributes: { group: "certificates.k8s.io", resource: "certificatesigningrequests", verb: "create" },
        },
      });
    assert.equal(review.status.allowed, true, "alpha's nodes can still join");
    const names = await admin.get<{ data: Record<string, string> }>(
      "/api/v1/namespaces/winfleet-alpha/configmaps/winfleet-node-names",
    );
    const alphaIds = (await tokens("alpha")).map((t) => Buffer.from(t.data["token-id"] ?? "", "base64").toString());
    assert.deepEqual(Object.keys(names.data).sort(), alphaIds.sort(), "alpha's names, for alpha's tokens alone");
    await ok(["destroy", "-s", "alpha", "--yes", "--skip-preview"]);
    const left = (
      await admin.get<{ items: Named[] }>("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings")
    ).items.filter((b) => b.metadata.name.startsWith("winfleet"));
    assert.deepEqual(left, []);
  });
});
