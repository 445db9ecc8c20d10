/**
 * The Pulumi program through the real engine against a real control plane: the Pulumi CLI
 * with its Node.js language host and the kubernetes resource plugin set-up built, a local
 * file backend, passphrase secrets, no plugin downloads. Every object is accepted (or
 * refused) by the real API server, the bootstrap token is checked against the real
 * authorizer, and its node CSR is approved and signed by the real controllers.
 *
 * The stack is a `local` pool that names the cluster: the cluster side (namespace, RBAC,
 * bootstrap token, content ConfigMap, upgrader DaemonSet) is what any pool deploys there.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient, KubeError } from "../../agent/cluster/kube-client";
import { ecKeyAndCsr } from "../../agent/cluster/pki";
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
      const token = await admin.get<{ type: string; data: Record<string, string> }>(
        `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${TOKEN_ID}`,
      );
      assert.equal(token.type, "bootstrap.kubernetes.io/token");
      assert.equal(Buffer.from(token.data["token-secret"] ?? "", "base64").toString(), TOKEN_SECRET);
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

    it("the state file holds the bootstrap token secret only encrypted", () => {
      const backend = (project.env.PULUMI_BACKEND_URL ?? "").replace("file://", "");
      const grep = spawnSync("grep", ["-rl", TOKEN_SECRET, backend], { encoding: "utf8" });
      assert.equal(grep.status, 1, `no file of the backend holds the token secret in plain text: ${grep.stdout}`);
      // And the state does hold it, encrypted: the check above is not passing on an empty backend.
      assert.equal(spawnSync("grep", ["-rlq", "bootstrap-token-e2etok", backend]).status, 0);
    });

    it("the bootstrap token may create a node client CSR and nothing else", async () => {
      const user = `system:bootstrap:${TOKEN_ID}`;
      const groups = [
        "system:bootstrappers",
        "system:bootstrappers:kubeadm:default-node-token",
        "system:authenticated",
      ];
      const csr = { group: "certificates.k8s.io", resource: "certificatesigningrequests" };
      assert.equal(await admin.allowed(user, groups, { ...csr, verb: "create" }), true);
      assert.equal(await admin.allowed(user, groups, { ...csr, verb: "create", subresource: "nodeclient" }), true);
      // What a kubelet does while it waits for its certificate: read its own CSR back.
      assert.equal(await admin.allowed(user, groups, { ...csr, verb: "get" }), true);
      const denied: Record<string, string>[] = [
        { ...csr, verb: "update", subresource: "approval" },
        { ...csr, verb: "delete" },
        { ...csr, verb: "create", subresource: "selfnodeclient" },
        { resource: "secrets", verb: "list", namespace: "kube-system" },
        { resource: "secrets", verb: "get", namespace: NS },
        { resource: "nodes", verb: "get" },
        { resource: "nodes", verb: "create" },
        { resource: "pods", verb: "create", namespace: NS },
        { resource: "configmaps", verb: "list", namespace: NS },
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

    it("TLS bootstrap end to end: the token's CSR is approved and signed by the controllers, and the node credential works", async () => {
      const dir = tempDir("winfleet-csr-");
      try {
        const node = "e2e-node-1";
        await ecKeyAndCsr(dir, "node", `/O=system:nodes/CN=system:node:${node}`);
        const bootstrap = admin.as({ token: `${TOKEN_ID}.${TOKEN_SECRET}` });
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
        const issued = await admin
          .waitFor(
            async () =>
              (
                await admin.get<{ status: { certificate?: string; conditions?: { type: string }[] } }>(
                  `/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`,
                )
              ).status,
            60_000,
            "the CSR to be signed",
          )
          .then(async () =>
            admin.waitFor(
              async () => {
                const s = (
                  await admin.get<{ status: { certificate?: string; conditions?: { type: string }[] } }>(
                    `/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`,
                  )
                ).status;
                return s.certificate && s.conditions?.some((c) => c.type === "Approved") ? s.certificate : undefined;
              },
              60_000,
              "the CSR to be approved and signed",
            ),
          );
        const certPem = Buffer.from(issued, "base64").toString();
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
      assert.equal(
        await admin.getOrUndefined(`/api/v1/namespaces/kube-system/secrets/bootstrap-token-${TOKEN_ID}`),
        undefined,
      );
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
