/**
 * kubeadm's discovery, both sides. `kubeadm init` publishes the cluster's CA in the
 * `kube-public/cluster-info` ConfigMap, readable without credentials; a joining node reads it
 * over an unverified connection and trusts the CA only if the SHA-256 of its public key is the
 * pin it was given (`--discovery-token-ca-cert-hash`, a stack's `caCertHash`). The throwaway
 * control plane is kubeadm-like, so whatever stands in for `kubeadm init` publishes it here; a
 * sandbox host's node stand-in discovers it as the Windows content's join component does.
 */
import { X509Certificate, createHash } from "node:crypto";
import { request } from "node:https";
import { parse } from "yaml";
import type { KubeClient } from "./kube-client";

/** The ConfigMap's path. */
export const CLUSTER_INFO = "/api/v1/namespaces/kube-public/configmaps/cluster-info";

/**
 * Publishes `cluster-info` as `kubeadm init` does: the ConfigMap with a kubeconfig naming the
 * server and the CA, and the Role and RoleBinding that let `system:anonymous` read that one
 * ConfigMap. Idempotent.
 */
export async function publishClusterInfo(admin: KubeClient, server: string, caPem: string): Promise<void> {
  const kubeconfig = [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: ''",
    "  cluster:",
    `    certificate-authority-data: ${Buffer.from(caPem).toString("base64")}`,
    `    server: ${server}`,
    "contexts: []",
    "current-context: ''",
    "users: []",
    "",
  ].join("\n");
  const objects: [string, Record<string, unknown>][] = [
    [
      "/api/v1/namespaces/kube-public/configmaps",
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cluster-info" }, data: { kubeconfig } },
    ],
    [
      "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/roles",
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "kubeadm:bootstrap-signer-clusterinfo" },
        rules: [{ apiGroups: [""], resources: ["configmaps"], resourceNames: ["cluster-info"], verbs: ["get"] }],
      },
    ],
    [
      "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-public/rolebindings",
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "kubeadm:bootstrap-signer-clusterinfo" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "kubeadm:bootstrap-signer-clusterinfo" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "system:anonymous" }],
      },
    ],
  ];
  for (const [path, body] of objects) {
    const name = (body.metadata as { name: string }).name;
    if (await admin.getOrUndefined(`${path}/${name}`)) await admin.put(`${path}/${name}`, body);
    else await admin.post(path, body);
  }
}

/** `sha256:<hex>` of a certificate's DER SubjectPublicKeyInfo: what kubeadm pins. */
export function spkiPin(certPem: string): string {
  const spki = new X509Certificate(certPem).publicKey.export({ type: "spki", format: "der" });
  return `sha256:${createHash("sha256").update(spki).digest("hex")}`;
}

function getUnverified(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // Unverified on purpose: what it returns is trusted only once its key matches the pin.
    const req = request(url, { rejectUnauthorized: false, timeout: 15_000 }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > 1 << 20) req.destroy(new Error(`${url}: answer larger than 1 MiB`));
        else chunks.push(c);
      });
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        if (res.statusCode === 200) resolve(text);
        else reject(new Error(`GET ${url}: ${res.statusCode ?? "no status"} ${text.slice(0, 200)}`));
      });
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on("error", reject);
    req.end();
  });
}

/**
 * The cluster CA (PEM) that `server` publishes in cluster-info, if its public key matches `pin`.
 * @throws naming the server when cluster-info cannot be read or holds no CA with that key.
 */
export async function discoverClusterCa(server: string, pin: string): Promise<string> {
  const text = await getUnverified(`${server}${CLUSTER_INFO}`);
  const kubeconfig = (JSON.parse(text) as { data?: { kubeconfig?: string } }).data?.kubeconfig ?? "";
  const doc = parse(kubeconfig) as { clusters?: { cluster?: { "certificate-authority-data"?: string } }[] };
  const data = doc.clusters?.[0]?.cluster?.["certificate-authority-data"];
  if (!data) throw new Error(`cluster-info from ${server} carries no certificate-authority-data`);
  const pem = Buffer.from(data, "base64").toString();
  for (const block of pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []) {
    if (spkiPin(block) === pin.toLowerCase()) return pem;
  }
  throw new Error(`the CA that ${server} serves does not match KUBE_CA_CERT_HASH: refusing to trust it`);
}
