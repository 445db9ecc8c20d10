/**
 * Node identity against the real API server and controllers: ClusterJoin's
 * objects for two named nodes and a scale set are applied to a throwaway
 * control plane (whose csrapproving controller runs, as kubeadm's does), and
 * CSRs are made with the tokens alone, as a node with nothing but its agent
 * config could. Nothing approves a winfleet token's CSR but winfleet's
 * approver, which signs a node's own name and denies every other — another
 * node's, a control-plane node's, a scale set sibling's that has joined, one
 * with alternative names or another organization. A token past its expiry is
 * refused by the API server itself.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { rmSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient, KubeError } from "../../agent/cluster/kube-client";
import { approveNodeCsrs } from "../../agent/cluster/node-approver";
import { ecKeyAndCsr } from "../../agent/cluster/pki";
import {
  NODE_NAMES_CONFIGMAP as RENDERED_NAMES,
  WINFLEET_TOKEN_GROUP as RENDERED_GROUP,
  renderBootstrapToken,
  renderNodeApproval,
  renderTlsBootstrapAccess,
} from "../../components/cluster-render";
import { NODE_NAMES_CONFIGMAP, WINFLEET_TOKEN_GROUP } from "../../agent/cluster/node-approver";
import { allowedNames, nodeTokens, tokenSecretOf } from "../../components/node-tokens";
import { createObjects, dayAway, enginesOrSkip, sleep, startTestControlPlane, tempDir } from "../support";

const engines = enginesOrSkip("kubernetes", "etcd");
const NS = "winfleet-system";
const STACK_SECRET = "0123456789abcdef";
const EPOCH = 1;
const tokens = nodeTokens("test\0wfid01", [
  { pool: "byo", names: ["win-a", "win-b"] },
  { pool: "ss", prefix: "winss" },
]);
const tokenOf = (node: string): string => {
  const t = tokens.find((x) => (x.node ?? `${x.prefix ?? ""}*`) === node);
  if (!t) throw new Error(`no token for ${node}`);
  return `${t.id}.${tokenSecretOf(STACK_SECRET, EPOCH, t)}`;
};

type Csr = { status?: { certificate?: string; conditions?: { type: string; reason?: string; message?: string }[] } };

describe(
  "a node's certificate for its own name only",
  { skip: typeof engines === "string" ? engines : false, timeout: 300_000 },
  () => {
    let cp: ControlPlane;
    let admin: KubeClient;
    let dir: string;
    let n = 0;

    /** A CSR for `subject` made with `token`, as a node's kubelet would; resolves with its name. */
    const ask = async (token: string, subject: string, extra: readonly string[] = []): Promise<string> => {
      const { csrPem } = await ecKeyAndCsr(dir, `k${n}`, subject, extra);
      const name = `csr-${n++}`;
      await new KubeClient(cp.server, { ca: cp.caPem, token }).post(
        "/apis/certificates.k8s.io/v1/certificatesigningrequests",
        {
          apiVersion: "certificates.k8s.io/v1",
          kind: "CertificateSigningRequest",
          metadata: { name },
          spec: {
            request: Buffer.from(csrPem).toString("base64"),
            signerName: "kubernetes.io/kube-apiserver-client-kubelet",
            usages: ["digital signature", "client auth"],
          },
        },
      );
      return name;
    };
    const csr = (name: string) => admin.get<Csr>(`/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`);
    const verdict = async (name: string): Promise<string> => {
      const c = (await csr(name)).status?.conditions?.[0];
      return c ? `${c.type}${c.message ? `: ${c.message}` : ""}` : "pending";
    };

    before(async () => {
      if (typeof engines === "string") return;
      dir = tempDir("winfleet-node-identity-");
      cp = await startTestControlPlane(engines);
      admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
      await createObjects(admin, [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: NS } },
        ...tokens.map((t) =>
          renderBootstrapToken(
            {
              id: t.id,
              secret: tokenSecretOf(STACK_SECRET, EPOCH, t),
              expiration: dayAway(),
              pool: t.pool,
              stack: "test",
              ...(t.node ? { node: t.node } : {}),
            },
            "test",
          ),
        ),
        ...renderTlsBootstrapAccess("test"),
        ...renderNodeApproval(
          NS,
          "test",
          tokens.map((t) => ({ id: t.id, ...allowedNames(t) })),
        ),
      ]);
    });

    after(async () => {
      await cp?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("the approver and the renders agree on the token group and the names' ConfigMap", () => {
      assert.equal(RENDERED_GROUP, WINFLEET_TOKEN_GROUP);
      assert.equal(RENDERED_NAMES, NODE_NAMES_CONFIGMAP);
    });

    it("nothing in the cluster approves a token's CSR by itself, not even for the node's own name", async () => {
      const own = await ask(tokenOf("win-a"), "/O=system:nodes/CN=system:node:win-a");
      const other = await ask(tokenOf("win-a"), "/O=system:nodes/CN=system:node:linux-control-plane-1");
      // The csrapproving controller syncs a new CSR at once; give it several times that.
      await sleep(5000);
      assert.equal(await verdict(own), "pending");
      assert.equal(await verdict(other), "pending");
    });

    it("the approver signs a node's own name and denies another node's, a control plane's, and a scale set's", async () => {
      await approveNodeCsrs(admin, NS); // the two CSRs of the test above, first
      const asked = {
        own: await ask(tokenOf("win-a"), "/O=system:nodes/CN=system:node:win-a"),
        sibling: await ask(tokenOf("win-a"), "/O=system:nodes/CN=system:node:win-b"),
        controlPlane: await ask(tokenOf("win-b"), "/O=system:nodes/CN=system:node:linux-control-plane-1"),
        scaleSetName: await ask(tokenOf("win-b"), "/O=system:nodes/CN=system:node:winss000001"),
        masters: await ask(tokenOf("win-a"), "/O=system:masters/CN=system:node:win-a"),
        alternativeNames: await ask(tokenOf("win-a"), "/O=system:nodes/CN=system:node:win-a", [
          "-addext",
          "subjectAltName=DNS:kubernetes.default",
        ]),
      };
      const pass = await approveNodeCsrs(admin, NS);
      assert.deepEqual(pass.approved, [asked.own]);
      assert.match(
        await verdict(asked.sibling),
        /^Denied: bootstrap token [a-z0-9]{6} \(pool byo\) was made for win-a, not for win-b$/,
      );
      assert.match(await verdict(asked.controlPlane), /^Denied: .*made for win-b, not for linux-control-plane-1$/);
      assert.match(await verdict(asked.scaleSetName), /^Denied: .*made for win-b, not for winss000001$/);
      assert.match(await verdict(asked.masters), /^Denied: organization system:masters is not system:nodes alone$/);
      assert.match(
        await verdict(asked.alternativeNames),
        /^Denied: a node client certificate has no alternative names$/,
      );
      // The controllers sign what was approved: the certificate names the node, in system:nodes.
      const cert = await admin.waitFor(
        async () => (await csr(asked.own)).status?.certificate,
        60_000,
        "the signed certificate",
      );
      const x509 = new X509Certificate(Buffer.from(cert, "base64"));
      assert.match(x509.subject, /CN=system:node:win-a/);
      assert.match(x509.subject, /O=system:nodes/);
      for (const denied of [asked.sibling, asked.controlPlane, asked.scaleSetName])
        assert.equal((await csr(denied)).status?.certificate, undefined, "nothing signed for a denied name");
    });

    it("a scale set's token gets a name of the set, once: not one a node has registered", async () => {
      const first = await ask(tokenOf("winss*"), "/O=system:nodes/CN=system:node:winss000001");
      const outside = await ask(tokenOf("winss*"), "/O=system:nodes/CN=system:node:win-a");
      await approveNodeCsrs(admin, NS);
      assert.equal(await verdict(first), "Approved: the name its bootstrap token was made for");
      assert.match(await verdict(outside), /made for winss and six letters or digits, not for win-a/);
      await admin.post("/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name: "winss000001" } });
      const again = await ask(tokenOf("winss*"), "/O=system:nodes/CN=system:node:winss000001");
      await approveNodeCsrs(admin, NS);
      assert.match(await verdict(again), /node winss000001 is registered already/);
    });

    it("the API server refuses a token past its expiry", async () => {
      const [t] = nodeTokens("expired", [{ pool: "old", names: ["win-old"] }]);
      if (!t) throw new Error("no token");
      const secret = tokenSecretOf(STACK_SECRET, EPOCH, t);
      await createObjects(admin, [
        renderBootstrapToken(
          { id: t.id, secret, expiration: "2001-01-01T00:00:00Z", pool: "old", node: "win-old", stack: "test" },
          "old",
        ),
      ]);
      const refused = await new KubeClient(cp.server, { ca: cp.caPem, token: `${t.id}.${secret}` })
        .get("/apis/certificates.k8s.io/v1/certificatesigningrequests")
        .catch((e: unknown) => e);
      assert.ok(refused instanceof KubeError && refused.status === 401, String(refused));
    });
  },
);
