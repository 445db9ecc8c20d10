/**
 * Who deploys, previews and checks a stack, with which credentials, through the real engine
 * against a real control plane (its RBAC authorizer judging every request):
 *
 * - the stack's kube context decides where the cluster side goes, whatever the kubeconfig's
 *   current context is (here it points at nothing);
 * - an identity bound to the roles `winfleet operator-stack` derives from the program (not
 *   cluster-admin) runs `up` and `destroy`, and may do nothing else it was not given;
 * - a preview identity that reads no Secret previews the stack with no change found, while a
 *   refresh with it is refused: so the workflows preview pull requests with such an identity and
 *   run the drift check, whose refresh reads the stack's Secrets, with one of its own;
 * - `winfleet preflight --cluster` (its library) reaches the API server as the stack's context,
 *   finds what that identity may not create and a bootstrap token whose id is taken.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient } from "../../agent/cluster/kube-client";
import { renderDeployerAccess } from "../../infra/deployer-access";
import type { CreatedObject } from "../../infra/operator-stack";
import { runPreflight } from "../../infra/preflight-run";
import { renderStack } from "../../infra/render";
import { enginesOrSkip, pulumiProject, type PulumiProject, startTestControlPlane, tempDir } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes");
const STACK = "creds";
const TOKEN_ID = "crd3n7";
const OPS = "ops";
const DEPLOYER = "winfleet-deployer";
const PREVIEWER = "winfleet-previewer";

function stackYaml(cp: ControlPlane, tokenId = TOKEN_ID): string {
  // Every string quoted: `pulumi config set` rewrites the file, and an unquoted time would come back as Go prints one.
  return toYaml(
    {
      config: {
        "winfleet:fleet": {
          cluster: {
            name: "creds",
            // Named in every kubeconfig this test writes, each time for another identity.
            kubeContext: "winfleet-creds",
            join: {
              method: "kubeadm",
              apiServer: cp.server,
              caCertHash: cp.caCertHash,
              tokenId,
              tokenSecret: "bootstrapTokenSecret",
              tokenExpiry: "2099-01-01T00:00:00Z",
            },
          },
          content: { dir: "content", template: "sandbox", templateVersion: "1.0.0" },
          agent: {
            version: "0.1.0",
            bundle: { url: "https://artifacts.example.test/winfleet-agent-0.1.0.tgz", sha256: "1".repeat(64) },
          },
          pools: [{ name: "local", kind: "local", hosts: 2 }],
          upgrader: { mode: "hostProcess", maxUnavailable: 1, image: "winfleet-agent:creds" },
        },
      },
    },
    { defaultStringType: "QUOTE_DOUBLE", defaultKeyType: "PLAIN" },
  );
}

/** A kubeconfig whose current context reaches nothing, and whose `winfleet-creds` context is `user`. */
function kubeconfig(cp: ControlPlane, user: Record<string, string>): string {
  const ca = Buffer.from(cp.caPem).toString("base64");
  return toYaml({
    apiVersion: "v1",
    kind: "Config",
    "current-context": "decoy",
    clusters: [
      { name: "creds", cluster: { server: cp.server, "certificate-authority-data": ca } },
      { name: "nowhere", cluster: { server: "https://127.0.0.1:1", "certificate-authority-data": ca } },
    ],
    users: [{ name: "u", user }],
    contexts: [
      { name: "winfleet-creds", context: { cluster: "creds", user: "u" } },
      { name: "decoy", context: { cluster: "nowhere", user: "u" } },
    ],
  });
}

describe(
  "credentials through the real engine",
  { skip: typeof engines === "string" ? engines : false, timeout: 1_200_000 },
  () => {
    let cp: ControlPlane;
    let admin: KubeClient;
    let project: PulumiProject;
    let objects: CreatedObject[] = [];
    /** The stack's bootstrap token Secrets (one per host, their ids derived), as the program declares them. */
    const tokenNames = (): string[] => {
      const names = objects
        .filter((o) => o.kind === "Secret" && o.metadata.name.startsWith("bootstrap-token-"))
        .map((o) => o.metadata.name);
      assert.equal(names.length, 2, "a token for each host");
      return names;
    };
    /** The bootstrap token Secret another made (the test above). */
    let takenByAnother = "bootstrap-token-kubead";
    const dir = tempDir("winfleet-creds-");
    // One path, as the workflows write each environment's kubeconfig to one path: the provider records it.
    const KUBECONFIG = join(dir, "kubeconfig");
    const as = (user: Record<string, string>): void => writeFileSync(KUBECONFIG, kubeconfig(cp, user), { mode: 0o600 });
    const token = async (account: string): Promise<string> =>
      (
        await admin.post<{ status: { token: string } }>(`/api/v1/namespaces/${OPS}/serviceaccounts/${account}/token`, {
          apiVersion: "authentication.k8s.io/v1",
          kind: "TokenRequest",
          spec: { expirationSeconds: 3600 },
        })
      ).status.token;
    const pulumi = (args: string[]) => project.pulumi(args, { env: { KUBECONFIG } });
    const preflight = async (stackFile: string): Promise<{ code: number; out: string }> => {
      let out = "";
      const code = await runPreflight(
        { stack: stackFile, cluster: true, azure: false, kubeconfig: KUBECONFIG },
        {
          now: new Date(),
          env: {},
          azureToken: () => Promise.reject(new Error("no Azure here")),
          write: (t) => (out += t),
        },
      );
      return { code, out };
    };

    before(async () => {
      if (typeof engines === "string") return;
      cp = await startTestControlPlane(engines);
      admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
      project = pulumiProject(engines, { KUBECONFIG });
      project.writeStack(STACK, stackYaml(cp));
      as(adminUser(cp));
      const init = await pulumi(["stack", "init", STACK, "--secrets-provider", "passphrase"]);
      assert.equal(init.code, 0, init.stderr);
      const set = await pulumi(["config", "set", "--secret", "winfleet:bootstrapTokenSecret", "q2w3e4r5t6y7u8i9"]);
      assert.equal(set.code, 0, set.stderr);
      const rendered = await renderStack(join(project.dir, "stacks", `Pulumi.${STACK}.yaml`));
      objects = rendered.resources
        .filter((r) => r.type.startsWith("kubernetes:"))
        .map(
          (r) =>
            ({
              ...r.inputs,
              apiVersion: r.type.split(":")[1]?.replace(/^core\//, ""),
              kind: r.type.split(":")[2],
            }) as unknown as CreatedObject,
        );
      await admin.post("/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: OPS } });
      for (const name of [DEPLOYER, PREVIEWER])
        await admin.post(`/api/v1/namespaces/${OPS}/serviceaccounts`, {
          apiVersion: "v1",
          kind: "ServiceAccount",
          metadata: { name },
        });
    });

    after(async () => {
      project?.dispose();
      await cp?.stop();
    });

    it("preflight --cluster reaches the API server as the stack's context and finds every create the identity may not make", async () => {
      as({ token: await token(DEPLOYER) });
      const { code, out } = await preflight(join(project.dir, "stacks", `Pulumi.${STACK}.yaml`));
      assert.equal(code, 1, out);
      assert.match(out, /ok {7}cluster-reach: the API server https:\/\/127\.0\.0\.1:\d+/);
      assert.match(out, /problem {2}cluster-permissions: this identity may not create namespaces\n/);
      assert.match(
        out,
        /problem {2}cluster-permissions: this identity may not bind rbac\.authorization\.k8s\.io\/clusterroles system:node-bootstrapper\n/,
      );
      assert.match(out, /problem {2}cluster-permissions: this identity may not create secrets in kube-system\n/);
    });

    it("finds a bootstrap token whose id another made (kubeadm, another stack)", async () => {
      const other = join(dir, `Pulumi.other.yaml`);
      writeFileSync(other, stackYaml(cp, "kubead"));
      // The ids are derived (the project, the stack, its tokenId and each node): take one the program will declare.
      const declared = (await renderStack(other)).resources
        .map((r) => r.inputs as { type?: string; metadata?: { name?: string }; stringData?: Record<string, string> })
        .filter((r) => r.type === "bootstrap.kubernetes.io/token");
      assert.equal(declared.length, 2, "a token for each of the stack's hosts");
      const taken = declared[0]?.stringData?.["token-id"] ?? "";
      assert.match(taken, /^[a-z0-9]{6}$/);
      assert.notEqual(taken, "kubead", "the tokenId seeds the ids, it is none of them");
      await admin.post("/api/v1/namespaces/kube-system/secrets", {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: `bootstrap-token-${taken}` },
        type: "bootstrap.kubernetes.io/token",
        stringData: {
          "token-id": taken,
          "token-secret": "0123456789abcdef",
          "usage-bootstrap-authentication": "true",
        },
      });
      as(adminUser(cp));
      const { out } = await preflight(other);
      assert.match(
        out,
        new RegExp(`problem {2}cluster-objects: Secret kube-system/bootstrap-token-${taken} exists already`),
      );
      assert.doesNotMatch(out, /cluster-permissions: this identity may not/, "the admin may");
      assert.equal((out.match(/bootstrap-token-[a-z0-9]{6} exists already/g) ?? []).length, 1, "the other is free");
      takenByAnother = `bootstrap-token-${taken}`;
    });

    it("an identity bound to what the program creates deploys the stack through the stack's context, the current one reaching nothing", async () => {
      for (const o of renderDeployerAccess({
        account: { name: DEPLOYER, namespace: OPS },
        objects,
        prefix: `${OPS}:${DEPLOYER}`,
      }))
        await admin.post(collectionOf(o), o);
      as({ token: await token(DEPLOYER) });
      const up = await pulumi(["up", "--yes", "--skip-preview"]);
      assert.equal(up.code, 0, `${up.stdout.slice(-3000)}\n${up.stderr.slice(-3000)}`);
      for (const name of tokenNames())
        assert.ok(await admin.getOrUndefined(`/api/v1/namespaces/kube-system/secrets/${name}`), name);
      const { out } = await preflight(join(project.dir, "stacks", `Pulumi.${STACK}.yaml`));
      assert.doesNotMatch(out, /cluster-permissions: this identity may not/, out);
      const user = `system:serviceaccount:${OPS}:${DEPLOYER}`;
      const groups = ["system:serviceaccounts", `system:serviceaccounts:${OPS}`, "system:authenticated"];
      const refused: Record<string, string>[] = [
        { resource: "secrets", verb: "get", namespace: "kube-system", name: takenByAnother },
        { resource: "secrets", verb: "list", namespace: "default" },
        { resource: "secrets", verb: "get", namespace: "default", name: "anything" },
        { resource: "pods", verb: "create", namespace: "kube-system" },
        { group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "bind", name: "cluster-admin" },
        { group: "apps", resource: "daemonsets", verb: "create", namespace: "default" },
      ];
      for (const attrs of refused)
        assert.equal(await admin.allowed(user, groups, attrs), false, `the deployer may not ${JSON.stringify(attrs)}`);
    });

    it("a preview identity that reads no Secret previews the stack and finds nothing to change; a refresh with it is refused", async () => {
      await admin.post("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name: "winfleet-creds-preview" },
        rules: [
          {
            apiGroups: [""],
            resources: ["namespaces", "serviceaccounts", "configmaps"],
            verbs: ["get", "list", "watch"],
          },
          { apiGroups: ["apps"], resources: ["daemonsets"], verbs: ["get", "list", "watch"] },
          {
            apiGroups: ["rbac.authorization.k8s.io"],
            resources: ["clusterroles", "clusterrolebindings", "roles", "rolebindings"],
            verbs: ["get", "list", "watch"],
          },
        ],
      });
      await admin.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: "winfleet-creds-preview" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "winfleet-creds-preview" },
        subjects: [{ kind: "ServiceAccount", name: PREVIEWER, namespace: OPS }],
      });
      as({ token: await token(PREVIEWER) });
      const preview = await pulumi(["preview", "--expect-no-changes"]);
      assert.equal(preview.code, 0, `${preview.stdout.slice(-3000)}\n${preview.stderr.slice(-3000)}`);
      const refresh = await pulumi(["refresh", "--preview-only"]);
      assert.notEqual(refresh.code, 0, "a refresh reads the stack's Secrets");
      assert.match(refresh.stdout + refresh.stderr, /secrets .* is forbidden/);
    });

    it("the deploying identity destroys what it deployed", async () => {
      as({ token: await token(DEPLOYER) });
      const destroy = await pulumi(["destroy", "--yes", "--skip-preview"]);
      assert.equal(destroy.code, 0, `${destroy.stdout.slice(-3000)}\n${destroy.stderr.slice(-3000)}`);
      const state = await pulumi(["stack", "export"]);
      const left = (JSON.parse(state.stdout) as { deployment: { resources?: { type: string }[] } }).deployment
        .resources;
      assert.deepEqual(
        (left ?? []).filter((r) => !r.type.startsWith("pulumi:")),
        [],
        "nothing left in the state",
      );
      const bindings = await admin.get<{ items: { metadata: { name: string } }[] }>(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?labelSelector=app.kubernetes.io%2Fpart-of%3Dwinfleet",
      );
      assert.deepEqual(
        bindings.items.map((b) => b.metadata.name),
        [`${OPS}:${DEPLOYER}`],
        "the deployer's own binding alone, which the program did not make",
      );
      for (const name of tokenNames())
        assert.equal(await admin.getOrUndefined(`/api/v1/namespaces/kube-system/secrets/${name}`), undefined, name);
    });
  },
);

/** The collection an object is created in. */
function collectionOf(o: Record<string, unknown>): string {
  const apiVersion = String(o.apiVersion);
  const kind = String(o.kind);
  const ns = (o.metadata as { namespace?: string }).namespace;
  const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${base}${ns ? `/namespaces/${ns}` : ""}/${kind.toLowerCase()}s`;
}

/** The control plane's admin user, as its kubeconfig has it (a client certificate of system:masters). */
function adminUser(cp: ControlPlane): Record<string, string> {
  const doc = parseYaml(readFileSync(cp.adminKubeconfig, "utf8")) as { users: { user: Record<string, string> }[] };
  const user = doc.users[0]?.user;
  if (!user) throw new Error(`${cp.adminKubeconfig} has no user`);
  return user;
}
