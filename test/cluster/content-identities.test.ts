/**
 * The identities the Windows content runs under, asked of the real authorizer: the RBAC
 * objects ClusterJoin renders for kube-proxy and for Calico are applied to a throwaway API
 * server (Node,RBAC authorization, NodeRestriction admission), and SubjectAccessReviews as
 * each identity show it may do exactly what its component needs: every grant its component
 * uses is allowed, and the neighbouring ones (another verb, resource or group) are denied. The
 * node's own credential (system:node:<name>, a certificate signed by the cluster CA) may patch
 * its own Node's status and is refused another's.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { ControlPlane } from "../../agent/cluster/control-plane";
import { KubeClient, KubeError } from "../../agent/cluster/kube-client";
import { ecKeyAndCsr } from "../../agent/cluster/pki";
import {
  CALICO_ACCOUNT,
  CALICO_TOKEN_SECRET,
  KUBE_PROXY_ACCOUNT,
  KUBE_PROXY_TOKEN_SECRET,
  renderAgentAccess,
  renderCalicoAccess,
  renderKubeProxyAccess,
} from "../../components/cluster-render";
import type { KubeObject } from "../../components/kube-objects";
import { enginesOrSkip, startTestControlPlane } from "../support/engines";

const engines = enginesOrSkip("kubernetes", "etcd");
const NS = "winfleet-system";
type Attrs = Record<string, string>;

/** The REST collection an object is created in. */
function collection(o: KubeObject): string {
  const plural = `${o.kind.toLowerCase()}s`;
  const base = o.apiVersion === "v1" ? "/api/v1" : `/apis/${o.apiVersion}`;
  return o.metadata.namespace ? `${base}/namespaces/${o.metadata.namespace}/${plural}` : `${base}/${plural}`;
}

/** A service account's user and groups, as the API server authenticates its token. */
const serviceAccount = (name: string): { user: string; groups: string[] } => ({
  user: `system:serviceaccount:${NS}:${name}`,
  groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"],
});

const shown = (e: unknown): string =>
  e instanceof Error ? e.message : `not refused: ${JSON.stringify(e)?.slice(0, 200) ?? "nothing"}`;
const show = (a: Attrs): string =>
  `${a.verb} ${a.group ? `${a.resource}.${a.group}` : a.resource}${a.subresource ? `/${a.subresource}` : ""}${a.namespace ? ` in ${a.namespace}` : ""}${a.name ? ` ${a.name}` : ""}`;

describe(
  "the content's identities under the real authorizer",
  { skip: typeof engines === "string" ? engines : false, timeout: 300_000 },
  () => {
    let cp: ControlPlane;
    let admin: KubeClient;
    let dir: string;
    /** Each attribute set that is not as expected, named; empty when the identity is exactly right. */
    const wrong = async (
      who: { user: string; groups: string[] },
      allowed: Attrs[],
      denied: Attrs[],
    ): Promise<string[]> => {
      const out: string[] = [];
      for (const a of allowed)
        if (!(await admin.allowed(who.user, who.groups, a))) out.push(`denied, but needed: ${show(a)}`);
      for (const a of denied)
        if (await admin.allowed(who.user, who.groups, a)) out.push(`allowed, but not needed: ${show(a)}`);
      return out;
    };
    const token = async (secret: string): Promise<string> => {
      const filled = await admin.waitFor(
        async () =>
          (await admin.get<{ data?: { token?: string } }>(`/api/v1/namespaces/${NS}/secrets/${secret}`)).data?.token,
        60_000,
        `${secret}'s token`,
      );
      return Buffer.from(filled, "base64").toString("utf8");
    };

    before(async () => {
      if (typeof engines === "string") return;
      dir = mkdtempSync(join(tmpdir(), "winfleet-identities-"));
      cp = await startTestControlPlane(engines);
      admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
      const objects = [
        ...renderAgentAccess(NS, "test"),
        ...renderKubeProxyAccess(NS, "test"),
        ...renderCalicoAccess(NS, "test"),
      ];
      // The namespace, then the accounts, then what names them (as ClusterJoin orders them).
      const order = (o: KubeObject): number => (o.kind === "Namespace" ? 0 : o.kind === "ServiceAccount" ? 1 : 2);
      for (const o of [...objects].sort((a, b) => order(a) - order(b))) await admin.post(collection(o), o);
    });

    after(async () => {
      await cp?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("kube-proxy's service account: list and watch Services and EndpointSlices, read Nodes, write Events; nothing else", async () => {
      const sa = serviceAccount(KUBE_PROXY_ACCOUNT);
      const allowed: Attrs[] = [
        ...["list", "watch"].flatMap((verb): Attrs[] => [
          { verb, resource: "services" },
          { verb, resource: "endpointslices", group: "discovery.k8s.io" },
          { verb, resource: "nodes" },
        ]),
        { verb: "get", resource: "nodes", name: "win-1" },
        ...["create", "patch"].flatMap((verb): Attrs[] => [
          { verb, resource: "events", namespace: "default" },
          { verb, resource: "events", group: "events.k8s.io", namespace: "default" },
        ]),
      ];
      const denied: Attrs[] = [
        { verb: "get", resource: "secrets", namespace: "kube-system" },
        { verb: "list", resource: "secrets" },
        { verb: "create", resource: "pods", namespace: "default" },
        { verb: "list", resource: "pods" },
        { verb: "patch", resource: "nodes", name: "win-1" },
        { verb: "patch", resource: "nodes", subresource: "status", name: "win-1" },
        { verb: "create", resource: "services", namespace: "default" },
        { verb: "delete", resource: "services", namespace: "default" },
        { verb: "create", resource: "endpointslices", group: "discovery.k8s.io", namespace: "default" },
        { verb: "list", resource: "endpoints" },
        { verb: "list", resource: "configmaps" },
        { verb: "delete", resource: "events", namespace: "default" },
        { verb: "create", resource: "serviceaccounts", subresource: "token", namespace: NS, name: KUBE_PROXY_ACCOUNT },
      ];
      assert.deepEqual(await wrong(sa, allowed, denied), []);
      // And with the token the cluster fills, the one the content turns into kube-proxy's kubeconfig.
      const proxy = admin.as({ token: await token(KUBE_PROXY_TOKEN_SECRET) });
      await proxy.get("/apis/discovery.k8s.io/v1/endpointslices");
      const refused = await proxy.get(`/api/v1/namespaces/${NS}/secrets`).catch((e: unknown) => e);
      assert.ok(refused instanceof KubeError && refused.status === 403, shown(refused));
    });

    it("Calico's service account: its node, policy, IPAM and configuration grants; nothing Linux-only or beyond", async () => {
      const sa = serviceAccount(CALICO_ACCOUNT);
      const calico = "crd.projectcalico.org";
      const allowed: Attrs[] = [
        { verb: "get", resource: "pods", namespace: "default", name: "p" },
        { verb: "patch", resource: "pods", subresource: "status", namespace: "default", name: "p" },
        { verb: "get", resource: "namespaces", name: "default" },
        ...["get", "list", "watch"].map((verb) => ({ verb, resource: "nodes" })),
        ...["patch", "update"].map((verb) => ({ verb, resource: "nodes", subresource: "status", name: "win-1" })),
        ...["list", "watch"].flatMap((verb) => [
          { verb, resource: "endpointslices", group: "discovery.k8s.io" },
          { verb, resource: "services" },
          { verb, resource: "networkpolicies", group: "networking.k8s.io" },
          { verb, resource: "pods" },
          { verb, resource: "serviceaccounts" },
        ]),
        ...["get", "list", "watch"].flatMap((verb) =>
          [
            "felixconfigurations",
            "ippools",
            "clusterinformations",
            "globalnetworkpolicies",
            "networkpolicies",
            "hostendpoints",
            "ipamblocks",
          ].map((resource) => ({ verb, resource, group: calico })),
        ),
        ...["create", "update"].flatMap((verb) =>
          ["ippools", "felixconfigurations", "clusterinformations"].map((resource) => ({
            verb,
            resource,
            group: calico,
          })),
        ),
        ...["get", "list", "create", "update", "delete"].flatMap((verb) =>
          ["blockaffinities", "ipamblocks", "ipamhandles"].map((resource) => ({ verb, resource, group: calico })),
        ),
        { verb: "watch", resource: "blockaffinities", group: calico },
        { verb: "create", resource: "ipamconfigs", group: calico },
        { verb: "update", resource: "caliconodestatuses", group: calico },
        { verb: "get", resource: "configmaps", namespace: "kube-system", name: "kubeadm-config" },
      ];
      const denied: Attrs[] = [
        { verb: "get", resource: "secrets", namespace: "kube-system" },
        { verb: "list", resource: "secrets" },
        { verb: "create", resource: "pods", namespace: "default" },
        { verb: "delete", resource: "pods", namespace: "default" },
        { verb: "patch", resource: "nodes", name: "win-1" },
        { verb: "delete", resource: "nodes", name: "win-1" },
        // Linux-only grants of Calico's own calico-node role.
        {
          verb: "create",
          resource: "serviceaccounts",
          subresource: "token",
          namespace: "kube-system",
          name: "calico-node",
        },
        { verb: "create", resource: "serviceaccounts", subresource: "token", namespace: NS, name: CALICO_ACCOUNT },
        { verb: "create", resource: "bgppeers", group: calico },
        { verb: "update", resource: "bgpconfigurations", group: calico },
        { verb: "get", resource: "daemonsets", group: "apps", namespace: "kube-system" },
        // ConfigMaps: kube-system's kubeadm-config only.
        { verb: "get", resource: "configmaps", namespace: "kube-system", name: "kube-proxy" },
        { verb: "get", resource: "configmaps", namespace: "default", name: "kubeadm-config" },
        { verb: "list", resource: "configmaps", namespace: "kube-system" },
        { verb: "delete", resource: "globalnetworkpolicies", group: calico },
        { verb: "create", resource: "globalnetworkpolicies", group: calico },
        { verb: "update", resource: "ipamconfigs", group: calico },
        { verb: "create", resource: "clusterrolebindings", group: "rbac.authorization.k8s.io" },
      ];
      assert.deepEqual(await wrong(sa, allowed, denied), []);
      const node = admin.as({ token: await token(CALICO_TOKEN_SECRET) });
      await node.get("/api/v1/nodes");
      const refused = await node.get("/api/v1/namespaces/kube-system/secrets").catch((e: unknown) => e);
      assert.ok(refused instanceof KubeError && refused.status === 403, shown(refused));
    });

    it("the node's own credential patches its own Node's status, and is refused another's", async () => {
      const own = "win-1";
      const other = "win-2";
      const user = `system:node:${own}`;
      const groups = ["system:nodes", "system:authenticated"];
      assert.equal(
        await admin.allowed(user, groups, { verb: "patch", resource: "nodes", subresource: "status", name: own }),
        true,
        "patch own status",
      );
      assert.equal(
        await admin.allowed(user, groups, { verb: "get", resource: "nodes", name: own }),
        true,
        "get own Node",
      );
      const denied: Attrs[] = [
        { verb: "delete", resource: "nodes", name: other },
        { verb: "get", resource: "secrets", namespace: NS, name: KUBE_PROXY_TOKEN_SECRET },
        { verb: "list", resource: "secrets" },
      ];
      for (const a of denied) {
        assert.equal(await admin.allowed(user, groups, a), false, show(a));
      }
      // A certificate as TLS bootstrap ends with (the cluster CA, O=system:nodes, CN=system:node:<name>).
      await ecKeyAndCsr(dir, "node", `/O=system:nodes/CN=${user}`);
      execFileSync(
        "openssl",
        [
          "x509",
          "-req",
          "-in",
          "node.csr",
          "-CA",
          cp.pki.caCert,
          "-CAkey",
          cp.pki.caKey,
          "-CAcreateserial",
          "-out",
          "node.crt",
          "-days",
          "1",
        ],
        { cwd: dir, stdio: "ignore" },
      );
      const asNode = admin.as({
        cert: readFileSync(join(dir, "node.crt"), "utf8"),
        key: readFileSync(join(dir, "node.key"), "utf8"),
      });
      await asNode.post("/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name: own } });
      await admin.post("/api/v1/nodes", { apiVersion: "v1", kind: "Node", metadata: { name: other } });
      const status = {
        status: {
          conditions: [
            {
              type: "WinfleetReady",
              status: "True",
              reason: "Converged",
              message: "test",
              lastHeartbeatTime: new Date().toISOString(),
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      };
      await asNode.patch(`/api/v1/nodes/${own}/status`, status, "strategic");
      const patched = await admin.get<{ status: { conditions?: { type: string }[] } }>(`/api/v1/nodes/${own}`);
      assert.ok(patched.status.conditions?.some((c) => c.type === "WinfleetReady"));
      // The Node authorizer lets a node write node status; NodeRestriction admits only its own.
      const refused = await asNode.patch(`/api/v1/nodes/${other}/status`, status, "strategic").catch((e: unknown) => e);
      assert.ok(
        refused instanceof KubeError && refused.status === 403,
        `patching another Node's status is refused: ${shown(refused)}`,
      );
      const untouched = await admin.get<{ status: { conditions?: { type: string }[] } }>(`/api/v1/nodes/${other}`);
      assert.ok(!untouched.status.conditions?.some((c) => c.type === "WinfleetReady"));
    });
  },
);
