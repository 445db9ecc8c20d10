/**
 * A real kubeconfig, as kubeadm writes one for a client: an RSA-2048 cluster
 * CA and a client certificate it signed (made by openssl at test time), both
 * inline as base64 with the client key. About 5.5 KB, the size that does not
 * fit a command line that has to carry it base64-encoded once more.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function openssl(dir: string, ...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

/** A kubeconfig for `user` (its certificate's CN) at `server`, with a freshly made CA and client certificate. */
export function realKubeconfig(user = "calico-node", server = "https://10.20.0.4:6443"): string {
  const dir = mkdtempSync(join(tmpdir(), "winfleet-kubeconfig-"));
  try {
    openssl(
      dir,
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "2",
      "-subj",
      "/CN=kubernetes",
    );
    openssl(
      dir,
      "req",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      "client.key",
      "-out",
      "client.csr",
      "-subj",
      `/O=system:serviceaccounts/CN=${user}`,
    );
    openssl(
      dir,
      "x509",
      "-req",
      "-in",
      "client.csr",
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-out",
      "client.crt",
      "-days",
      "2",
    );
    const b64 = (name: string): string => readFileSync(join(dir, name)).toString("base64");
    return `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: ${b64("ca.crt")}
    server: ${server}
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: ${user}
  name: ${user}@kubernetes
current-context: ${user}@kubernetes
preferences: {}
users:
- name: ${user}
  user:
    client-certificate-data: ${b64("client.crt")}
    client-key-data: ${b64("client.key")}
`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
