/**
 * Real X.509 material for the kubeconfig tests, made by openssl at test time
 * (nothing checked in expires): a cluster CA, an API server certificate for
 * 127.0.0.1, one valid only for the name `kube.test`, node client certificates
 * the CA signed, and a second CA that signed nothing the server uses.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** PEM files in one directory; `read` gives a file's bytes. */
export interface Pki {
  readonly dir: string;
  readonly read: (name: string) => Buffer;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

function ca(dir: string, name: string): void {
  openssl(dir, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.crt`, "-days", "2", "-subj", `/CN=${name}`);
}

function signed(dir: string, name: string, subject: string, ext: string, by = "ca"): void {
  writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
  openssl(dir, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject);
  openssl(dir, "x509", "-req", "-in", `${name}.csr`, "-CA", `${by}.crt`, "-CAkey", `${by}.key`, "-CAcreateserial", "-out", `${name}.crt`, "-days", "2", "-extfile", `${name}.ext`);
}

/** Makes the material in `dir` (about a second of openssl). */
export function makePki(dir: string): Pki {
  ca(dir, "ca");
  ca(dir, "other-ca");
  signed(dir, "server", "/CN=kube-apiserver", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth");
  signed(dir, "named-server", "/CN=kube-apiserver", "subjectAltName=DNS:kube.test\nextendedKeyUsage=serverAuth");
  signed(dir, "node", "/O=system:nodes/CN=system:node:win-node-1", "extendedKeyUsage=clientAuth");
  signed(dir, "node-rotated", "/O=system:nodes/CN=system:node:win-node-1-rotated", "extendedKeyUsage=clientAuth");
  signed(dir, "stranger", "/CN=stranger", "extendedKeyUsage=clientAuth", "other-ca");
  return { dir, read: (name) => readFileSync(join(dir, name)) };
}
