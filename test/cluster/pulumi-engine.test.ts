/**
 * The Pulumi program through the real engine against a real control plane: the Pulumi CLI
 * with its Node.js language host and the kubernetes resource plugin set-up built, a local
 * file backend, passphrase secrets, no plugin downloads. Every object is accepted (or
 * refused) by the real API server, each node's bootstrap token is checked against the real
 * authorizer, and a node's CSR is approved by winfleet's approver (running with the identity the
 * stack gives it) and signed by the real controllers.
 *
 * The stack is a `local` pool that names the cluster: the cluster side (namespace, RBAC, a
 * bootstrap token per host, the approver's names, content ConfigMap, upgrader DaemonSet) is what
 * any pool deploys there.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient, KubeError } from "../../agent/cluster/kube-client";
import { runNodeApprover, WINFLEET_TOKEN_GROUP } from "../../agent/cluster/node-approver";
import { ecKeyAndCsr } from "../../agent/cluster/pki";
import { localHostNames } from "../../components";
import { nodeTokens } from "../../components/node-tokens";
import {
  enginesOrSkip,
  pulumiProject,
  type PulumiProject,
  runCommand,
  startTestControlPlane,
  tempDir,
} from "../support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");
// The stack's own namespace: `winfleet-<stack>` when the stack names none.
const NS = "winfleet-e2e";
const TOKEN_ID = "e2etok";
const TOKEN_SECRET = "q2w3e4r5t6y7u8i9";
const STACK = "e2e";
const HOSTS = localHostNames("local", 3);

/** A bootstrap token Secret as the API returns it. */
type TokenSecret = {
  metadata: { name: string; labels?: Record<string, string> };
  type: string;
  data: Record<string, string>;
};
const field = (t: TokenSecret, key: string) => Buffer.from(t.data[key] ?? "", "base64").toString("utf8");

function stackYaml(cp: ControlPlane, templateVersion: string, maxUnavailable: number | string = 1): string {
  return [
    "config:",
    "  winfleet:fleet:",
    "    cluster:",
    "      name: e2e",
    "      join:",
    "        method: kubeadm",
    `        apiServer: ${cp.server}`,
    `        caCertHash: ${cp.caCertHash}`,
    `        tokenId: ${TOKEN_ID}`,
    "        tokenSecret: bootstrapTokenSecret",
    "    content:",
    "      dir: content",
    "      template: sandbox",
    `      templateVersion: ${templateVersion}`,
    "    agent:",
    "      version: 0.1.0",
    "      bundle:",
    "        url: https://artifacts.example.test/winfleet-agent-0.1.0.tgz",
    `        sha256: "${"0".repeat(64)}"`,
    "    pools:",
    "      - name: local",
    "        kind: local",
    "        hosts: 3",
    "    upgrader:",
    "      mode: hostProcess",
    `      maxUnavailable: ${JSON.stringify(maxUnavailable)}`,
    "      image: winfleet-agent:e2e",
    "",
  ].join("\n");
}

/** The steps a `pulumi preview --json` would take, as "op type name". */
function previewSteps(json: string): string[] {
  const doc = JSON.parse(json) as { steps?: { op: string; urn: string }[] };
  return (doc.steps ?? [])
    .filter((s) => s.op !== "same")
    .map((s) => {
      const [, , types = "", name = ""] = s.urn.split("::");
      return `${s.op} ${types.split("$").pop() ?? ""} ${name}`;
    })
    .sort();
}

describe(
  "the Pulumi program through the real engine",
  { skip: typeof engines === "string" ? engines : false, timeout: 1_200_000 },
  () => {
    let cp: ControlPlane;
    let admin: KubeClient;
    let project: PulumiProject;
    /** The stack file's encryption salt and secure values, kept when the test rewrites the fleet. */
    let secured = "";
    const writeFleet = (templateVersion: string, maxUnavailable: number | string = 1) =>
      project.writeStack(STACK, `${stackYaml(cp, templateVersion, maxUnavailable)}${secured}`);
    const ok = async (args: string[], input?: string) => {
      const r = await project.pulumi(args, input === undefined ? {} : { input });
      assert.equal(
        r.code,
        0,
        `pulumi ${args.join(" ")} exited ${r.code}:\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`,
      );
      return r;
    };

    /** The stack's bootstrap tokens in the cluster. */
    const stackTokens = async () =>
      (
        await admin.get<{ items: TokenSecret[] }>(
          `/api/v1/namespaces/kube-system/secrets?labelSelector=${encodeURIComponent(`winfleet.io/stack=${STACK}`)}&fieldSelector=${encodeURIComponent("type=bootstrap.kubernetes.io/token")}`,
        )
      ).items;
    /** The token (`<id>.<secret>`) the stack made for `node`. */
    const tokenOf = async (node: string) => {
      const t = (await stackTokens()).find((x) => x.metadata.labels?.["winfleet.io/node"] === node);
      assert.ok(t, `a token for ${node}`);
      return { id: field(t, "token-id"), secret: field(t, "token-secret") };
    };

    before(async () => {
      if (typeof engines === "string") return;
      cp = await startTestControlPlane(engines);
      admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
      project = pulumiProject(engines, { KUBECONFIG: cp.adminKubeconfig });
      project.writeStack(STACK, stackYaml(cp, "1.0.0"));
      await ok(["stack", "init", STACK, "--secrets-provider", "passphrase"]);
      await ok(["config", "set", "--secret", "winfleet:bootstrapTokenSecret", TOKEN_SECRET]);
      const file = readFileSync(join(project.dir, "stacks", `Pulumi.${STACK}.yaml`), "utf8").split("\n");
      // The secure value continues the config map the fleet ends; the salt is a top-level key after it.
      secured = `${[...file.filter((l) => /^( {2}winfleet:bootstrapTokenSecret:| {4}secure:)/.test(l)), ...file.filter((l) => l.startsWith("encryptionsalt:"))].join("\n")}\n`;
      assert.match(secured, /secure: v1:/);
      writeFleet("1.0.0");
    });

    after(async () => {
      project?.dispose();
      await cp?.stop();
    });

    it("pulumi up creates the cluster side, every object accepted by the API server", async () => {
      await ok(["up", "--yes", "--skip-preview"]);
      const ns = await admin.get<{ metadata: { labels: Record<string, string> } }>(`/api/v1/namespaces/${NS}`);
      assert.equal(ns.metadata.labels["pod-security.kubernetes.io/enforce"], "privileged");
      // One token per host, named by the id derived from the stack (project/stack and tokenId) and the host.
      const tokens = await stackTokens();
      assert.deepEqual(tokens.map((t) => t.metadata.labels?.["winfleet.io/node"]).sort(), HOSTS);
      const derived = nodeTokens(`winfleet/${STACK}\0${TOKEN_ID}`, [{ pool: "local", names: HOSTS }]);
      for (const t of tokens) {
        const id = field(t, "token-id");
        const node = t.metadata.labels?.["winfleet.io/node"];
        assert.equal(id, derived.find((d) => d.node === node)?.id, `${node}'s token id is derived`);
        assert.equal(t.metadata.name, `bootstrap-token-${id}`);
        assert.notEqual(id, TOKEN_ID, "the tokenId seeds the ids; no token has it");
        assert.match(field(t, "token-secret"), /^[a-z0-9]{16}$/);
        assert.notEqual(field(t, "token-secret"), TOKEN_SECRET, "each token's secret is derived, not the stack's");
        assert.equal(field(t, "auth-extra-groups"), WINFLEET_TOKEN_GROUP);
        assert.ok(Date.parse(field(t, "expiration")) > Date.now(), "it expires, later");
      }
      assert.equal(new Set(tokens.map((t) => field(t, "token-secret"))).size, HOSTS.length, "a secret per host");
      const names = await admin.get<{ data: Record<string, string> }>(
        `/api/v1/namespaces/${NS}/configmaps/winfleet-node-names`,
      );
      assert.deepEqual(
        Object.fromEntries(Object.entries(names.data).map(([id, v]) => [id, JSON.parse(v) as unknown])),
        Object.fromEntries(derived.map((d) => [d.id, { pool: "local", names: [d.node] }])),
        "the approver reads each token's one name",
      );
      const ds = await admin.get<{ items: { metadata: { name: string } }[] }>(
        `/apis/apps/v1/namespaces/${NS}/daemonsets`,
      );
      assert.ok(ds.items.length >= 1, "an upgrader DaemonSet");
      const maps = await admin.get<{ items: { metadata: { name: string } }[] }>(`/api/v1/namespaces/${NS}/configmaps`);
      assert.ok(
        maps.items.some((m) => m.metadata.name.startsWith("winfleet-content")),
        `a content ConfigMap among ${maps.items.map((m) => m.metadata.name).join(", ")}`,
      );
    });

    it("a second preview finds nothing to change", async () => {
      await ok(["preview", "--expect-no-changes"]);
    });

    it("the state file holds neither the stack's token secret nor any node's token secret in plain text", async () => {
      const backend = (project.env.PULUMI_BACKEND_URL ?? "").replace("file://", "");
      const tokens = await stackTokens();
      assert.equal(tokens.length, HOSTS.length);
      for (const secret of [TOKEN_SECRET, ...tokens.map((t) => field(t, "token-secret"))]) {
        const grep = spawnSync("grep", ["-rlF", secret, backend], { encoding: "utf8" });
        assert.equal(grep.status, 1, `no file of the backend holds ${secret} in plain text: ${grep.stdout}`);
      }
      // And the state does hold the tokens, encrypted: the check above is not passing on an empty backend.
      for (const t of tokens) assert.equal(spawnSync("grep", ["-rlqF", t.metadata.name, backend]).status, 0);
    });

    it("a node's bootstrap token authenticates in winfleet's token group alone, and may create a CSR and nothing else", async () => {
      const token = await tokenOf(HOSTS[0] ?? "");
      // Who the API server takes the token for (not groups the test assumes).
      const review = await admin
        .as({ token: `${token.id}.${token.secret}` })
        .post<{ status: { userInfo: { username: string; groups: string[] } } }>(
          "/apis/authentication.k8s.io/v1/selfsubjectreviews",
          { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
        );
      const { username: user, groups } = review.status.userInfo;
      assert.equal(user, `system:bootstrap:${token.id}`);
      assert.deepEqual([...groups].sort(), ["system:authenticated", "system:bootstrappers", WINFLEET_TOKEN_GROUP]);
      const csr = { group: "certificates.k8s.io", resource: "certificatesigningrequests" };
      assert.equal(await admin.allowed(user, groups, { ...csr, verb: "create" }), true);
      // What a kubelet does while it waits for its certificate: read its own CSR back.
      assert.equal(await admin.allowed(user, groups, { ...csr, verb: "get" }), true);
      const denied: Record<string, string>[] = [
        // What the csrapproving controller asks before it approves a node client CSR: only winfleet approves these.
        { ...csr, verb: "create", subresource: "nodeclient" },
        { ...csr, verb: "update", subresource: "approval" },
        { ...csr, verb: "delete" },
        { ...csr, verb: "create", subresource: "selfnodeclient" },
        { resource: "secrets", verb: "list", namespace: "kube-system" },
        { resource: "secrets", verb: "get", namespace: NS },
        { resource: "nodes", verb: "get" },
        { resource: "nodes", verb: "create" },
        { resource: "pods", verb: "create", namespace: NS },
        { resource: "configmaps", verb: "list", namespace: NS },
        { resource: "configmaps", verb: "get", namespace: NS, name: "winfleet-node-names" },
        { group: "apps", resource: "daemonsets", verb: "patch", namespace: NS },
        { group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", verb: "create" },
        { resource: "namespaces", verb: "create" },
      ];
      for (const attrs of denied)
        assert.equal(
          await admin.allowed(user, groups, attrs),
          false,
          `the bootstrap token may not ${JSON.stringify(attrs)}`,
        );
    });

    it("TLS bootstrap end to end: winfleet's approver, with the identity the stack gives it, approves the node's own name; the controllers sign; the credential works", async () => {
      const dir = tempDir("winfleet-csr-");
      const approver = new AbortController();
      try {
        // The approver as its Deployment would run it: the stack's service account and roles, nothing more.
        const { token: approverToken } = (
          await admin.post<{ status: { token: string } }>(
            `/api/v1/namespaces/${NS}/serviceaccounts/winfleet-node-approver/token`,
            { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } },
          )
        ).status;
        const errors: unknown[] = [];
        const approving = runNodeApprover(admin.as({ token: approverToken }), NS, {
          signal: approver.signal,
          intervalMs: 300,
          onError: (e) => errors.push(e),
        });
        const node = HOSTS[0] ?? "";
        const token = await tokenOf(node);
        await ecKeyAndCsr(dir, "node", `/O=system:nodes/CN=system:node:${node}`);
        const bootstrap = admin.as({ token: `${token.id}.${token.secret}` });
        const name = `node-csr-${node}`;
        await bootstrap.post("/apis/certificates.k8s.io/v1/certificatesigningrequests", {
          apiVersion: "certificates.k8s.io/v1",
          kind: "CertificateSigningRequest",
          metadata: { name },
          spec: {
            request: readFileSync(join(dir, "node.csr")).toString("base64"),
            signerName: "kubernetes.io/kube-apiserver-client-kubelet",
            usages: ["digital signature", "client auth"],
          },
        });
        type Status = { certificate?: string; conditions?: { type: string; reason?: string }[] };
        const issued = await admin.waitFor(
          async () => {
            const s = (
              await admin.get<{ status: Status }>(`/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`)
            ).status;
            return s.certificate && s.conditions?.some((c) => c.type === "Approved") ? s : undefined;
          },
          120_000,
          `the CSR to be approved and signed (approver errors: ${errors.map(String).join("; ")})`,
        );
        approver.abort();
        await approving;
        assert.deepEqual(errors, [], "the approver's identity may do what it needs");
        assert.equal(
          issued.conditions?.find((c) => c.type === "Approved")?.reason,
          "WinfleetNodeName",
          "approved by winfleet's approver, not by the controllers",
        );
        const certPem = Buffer.from(issued.certificate ?? "", "base64").toString();
        const cert = new X509Certificate(certPem);
        assert.match(cert.subject, new RegExp(`CN=system:node:${node}`));
        assert.ok(cert.verify(new X509Certificate(cp.caPem).publicKey), "signed by the cluster CA");
        // The node's own credential: it may register its Node, and NodeRestriction keeps it off another's.
        const asNode = admin.as({ cert: certPem, key: readFileSync(join(dir, "node.key"), "utf8") });
        await asNode.post("/api/v1/nodes", {
          apiVersion: "v1",
          kind: "Node",
          metadata: { name: node, labels: { "kubernetes.io/os": "windows" } },
        });
        await admin.post("/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name: "e2e-node-2" } });
        const refused = await asNode
          .patch("/api/v1/nodes/e2e-node-2", { metadata: { annotations: { x: "y" } } })
          .catch((e: unknown) => e);
        assert.ok(
          refused instanceof KubeError && refused.status === 403,
          `patching another Node is refused: ${String(refused)}`,
        );
      } finally {
        approver.abort();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("a templateVersion bump previews exactly the upgrader's changes, and up applies them", async () => {
      writeFleet("1.1.0");
      const before = await admin.get<{
        items: {
          metadata: { name: string };
          spec: { template: { metadata: { annotations?: Record<string, string> } } };
        }[];
      }>(`/apis/apps/v1/namespaces/${NS}/daemonsets`);
      const preview = await ok(["preview", "--json"]);
      const steps = previewSteps(preview.stdout);
      assert.ok(steps.length > 0, "the bump changes something");
      for (const s of steps)
        assert.match(
          s,
          /^update (kubernetes:apps\/v1:DaemonSet|kubernetes:core\/v1:ConfigMap) /,
          `only the upgrader's DaemonSet and ConfigMap change: ${steps.join("; ")}`,
        );
      assert.ok(
        steps.some((s) => s.includes("DaemonSet")),
        `the DaemonSet's pod template changes: ${steps.join("; ")}`,
      );
      await ok(["up", "--yes", "--skip-preview"]);
      const afterUp = await admin.get<typeof before>(`/apis/apps/v1/namespaces/${NS}/daemonsets`);
      assert.notDeepEqual(
        afterUp.items.map((d) => d.spec.template.metadata.annotations),
        before.items.map((d) => d.spec.template.metadata.annotations),
      );
      await ok(["preview", "--expect-no-changes"]);
    });

    it("refresh finds the cluster as the state has it", async () => {
      await ok(["refresh", "--yes", "--expect-no-changes"]);
    });

    it("the policy pack passes this stack and refuses one that breaks a mandatory rule, with the rule's message", async () => {
      await ok(["preview", "--policy-pack", join(project.dir, "policy")]);
      writeFleet("1.1.0", "100%");
      try {
        const r = await project.pulumi(["preview", "--policy-pack", join(project.dir, "policy")]);
        assert.notEqual(r.code, 0, "the preview is refused");
        const text = r.stdout + r.stderr;
        assert.match(text, /winfleet-upgrader-bounded-rollout/);
        assert.match(text, /maxUnavailable is "100%"/);
      } finally {
        writeFleet("1.1.0");
      }
    });

    it("npm run drift finds a DaemonSet patched out of band and a deleted ConfigMap, and --remediate restores both", async () => {
      const ds =
        (await admin.get<{ items: { metadata: { name: string } }[] }>(`/apis/apps/v1/namespaces/${NS}/daemonsets`))
          .items[0]?.metadata.name ?? "";
      await admin.patch(`/apis/apps/v1/namespaces/${NS}/daemonsets/${ds}`, {
        spec: { updateStrategy: { rollingUpdate: { maxUnavailable: 3 } } },
      });
      const maps = (
        await admin.get<{ items: { metadata: { name: string } }[] }>(`/api/v1/namespaces/${NS}/configmaps`)
      ).items.map((m) => m.metadata.name);
      const content = maps.find((m) => m.startsWith("winfleet-content")) ?? "";
      await admin.delete(`/api/v1/namespaces/${NS}/configmaps/${content}`);
      const drift = (args: string[]) =>
        runCommand(process.execPath, ["--import", "tsx", "infra/drift-main.ts", "--stack", STACK, ...args], {
          cwd: project.dir,
          env: project.env,
          timeoutMs: 600_000,
        });
      const found = await drift([]);
      assert.equal(found.code, 1, `drift exits 1:\n${found.stdout}\n${found.stderr.slice(-3000)}`);
      assert.match(found.stdout, /DRIFT/);
      // Each named by its type and Pulumi name (the DaemonSet's carries its Kubernetes name).
      assert.match(found.stdout, new RegExp(`update kubernetes:apps/v1:DaemonSet \\S*${ds}`));
      assert.match(found.stdout, /delete kubernetes:core\/v1:ConfigMap content-configmap/);
      const fixed = await drift(["--remediate"]);
      assert.equal(fixed.code, 0, `--remediate exits 0:\n${fixed.stdout}\n${fixed.stderr.slice(-3000)}`);
      const restored = await admin.get<{ spec: { updateStrategy: { rollingUpdate: { maxUnavailable: number } } } }>(
        `/apis/apps/v1/namespaces/${NS}/daemonsets/${ds}`,
      );
      assert.equal(restored.spec.updateStrategy.rollingUpdate.maxUnavailable, 1);
      assert.ok(await admin.getOrUndefined(`/api/v1/namespaces/${NS}/configmaps/${content}`), "the ConfigMap is back");
      const clean = await drift([]);
      assert.equal(clean.code, 0, `a second check is clean:\n${clean.stdout}\n${clean.stderr.slice(-3000)}`);
    });

    it("pulumi destroy leaves no winfleet object in the cluster", async () => {
      await ok(["destroy", "--yes", "--skip-preview"]);
      assert.deepEqual(await stackTokens(), [], "no bootstrap token of the stack");
      const bindings = await admin.get<{ items: { metadata: { name: string } }[] }>(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?labelSelector=app.kubernetes.io%2Fpart-of%3Dwinfleet",
      );
      assert.deepEqual(
        bindings.items.map((b) => b.metadata.name),
        [],
      );
      const ns = await admin.waitFor(
        async () => (await admin.getOrUndefined(`/api/v1/namespaces/${NS}`)) === undefined,
        60_000,
        "the namespace to be gone",
      );
      assert.equal(ns, true);
    });
  },
);
