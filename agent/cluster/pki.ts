/**
 * The PKI of a throwaway control plane, made per run by openssl: one CA that signs the API
 * server's serving certificate, the client certificates of the administrator,
 * kube-controller-manager and kube-scheduler, and (as kubeadm's cluster CA does) node certificates through the CSR
 * signer; a second CA for etcd alone (as kubeadm's `etcd/ca`), which signs etcd's serving and peer
 * certificates and the API server's etcd client certificate, so no certificate of the cluster's —
 * a node's, the administrator's — is one etcd accepts; and the service-account key pair. Nothing is
 * written outside `dir`; keys are 0600.
 */
import { execFile } from "node:child_process";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileP = promisify(execFile);

/** Paths of the PKI's files, all inside one directory. */
export interface ControlPlanePki {
  readonly dir: string;
  readonly caCert: string;
  readonly caKey: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly adminCert: string;
  readonly adminKey: string;
  readonly controllerManagerCert: string;
  readonly controllerManagerKey: string;
  readonly schedulerCert: string;
  readonly schedulerKey: string;
  /** The API server's client certificate for kubelets (logs), in system:masters as kubeadm's was. */
  readonly kubeletClientCert: string;
  readonly kubeletClientKey: string;
  readonly serviceAccountKey: string;
  readonly serviceAccountPub: string;
  /** etcd's own CA: the only issuer etcd trusts, for clients and peers. */
  readonly etcdCaCert: string;
  /** etcd's serving certificate (127.0.0.1, localhost), also its peer certificate. */
  readonly etcdServerCert: string;
  readonly etcdServerKey: string;
  /** The API server's client certificate for etcd (and the readiness check's). */
  readonly etcdClientCert: string;
  readonly etcdClientKey: string;
}

async function openssl(dir: string, args: readonly string[]): Promise<void> {
  try {
    await execFileP("openssl", args, { cwd: dir });
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr ?? "";
    throw new Error(`openssl ${args[0]} failed: ${stderr.trim() || (e as Error).message}`);
  }
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"] as const;

/**
 * A new P-256 key and a certificate request for `subject` (e.g. `/O=system:nodes/CN=system:node:n1`),
 * written as `<name>.key` and `<name>.csr` in `dir`; `extra` adds `req` options such as `-addext`.
 */
export async function ecKeyAndCsr(
  dir: string,
  name: string,
  subject: string,
  extra: readonly string[] = [],
): Promise<{ keyPem: string; csrPem: string }> {
  await openssl(dir, [
    "req",
    "-new",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
    ...extra,
  ]);
  const [keyPem, csrPem] = await Promise.all([
    readFile(join(dir, `${name}.key`), "utf8"),
    readFile(join(dir, `${name}.csr`), "utf8"),
  ]);
  return { keyPem, csrPem };
}

async function clientCert(
  dir: string,
  name: string,
  subject: string,
  ca = "ca",
  ext = "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
): Promise<void> {
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(dir, ["req", ...EC, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", subject]);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${ca}.crt`,
    "-CAkey",
    `${ca}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "7",
    "-extfile",
    `${name}.ext`,
  ]);
}

/** A self-signed CA, `<name>.crt` and `<name>.key`, valid for a week. */
async function makeCa(dir: string, name: string, subject: string): Promise<void> {
  await writeFile(
    join(dir, `${name}.ext`),
    "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\nsubjectKeyIdentifier=hash\n",
  );
  await openssl(dir, [
    "req",
    "-x509",
    ...EC,
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "7",
    "-subj",
    subject,
    "-extensions",
    "v3_ca",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
  ]);
}

/** Makes the PKI in `dir` (an existing, private directory). About a second of openssl. */
export async function makeControlPlanePki(dir: string): Promise<ControlPlanePki> {
  await makeCa(dir, "ca", "/CN=winfleet-local-ca");
  await writeFile(
    join(dir, "apiserver.ext"),
    [
      "basicConstraints=CA:FALSE",
      "keyUsage=critical,digitalSignature,keyEncipherment",
      "extendedKeyUsage=serverAuth",
      "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local",
      "",
    ].join("\n"),
  );
  await openssl(dir, [
    "req",
    ...EC,
    "-keyout",
    "apiserver.key",
    "-out",
    "apiserver.csr",
    "-subj",
    "/CN=kube-apiserver",
  ]);
  await openssl(dir, [
    "x509",
    "-req",
    "-in",
    "apiserver.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "apiserver.crt",
    "-days",
    "7",
    "-extfile",
    "apiserver.ext",
  ]);
  await clientCert(dir, "admin", "/O=system:masters/CN=kubernetes-admin");
  await clientCert(dir, "controller-manager", "/CN=system:kube-controller-manager");
  await clientCert(dir, "scheduler", "/CN=system:kube-scheduler");
  await clientCert(dir, "apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client");
  await makeCa(dir, "etcd-ca", "/CN=winfleet-local-etcd-ca");
  await clientCert(
    dir,
    "etcd-server",
    "/CN=winfleet-local-etcd",
    "etcd-ca",
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
  );
  await clientCert(dir, "apiserver-etcd-client", "/CN=kube-apiserver-etcd-client", "etcd-ca");
  await openssl(dir, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key"]);
  await openssl(dir, ["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
  for (const key of [
    "ca.key",
    "apiserver.key",
    "admin.key",
    "controller-manager.key",
    "scheduler.key",
    "apiserver-kubelet-client.key",
    "etcd-ca.key",
    "etcd-server.key",
    "apiserver-etcd-client.key",
    "sa.key",
  ])
    await chmod(join(dir, key), 0o600);
  const p = (f: string) => join(dir, f);
  return {
    dir,
    caCert: p("ca.crt"),
    caKey: p("ca.key"),
    serverCert: p("apiserver.crt"),
    serverKey: p("apiserver.key"),
    adminCert: p("admin.crt"),
    adminKey: p("admin.key"),
    controllerManagerCert: p("controller-manager.crt"),
    controllerManagerKey: p("controller-manager.key"),
    schedulerCert: p("scheduler.crt"),
    schedulerKey: p("scheduler.key"),
    kubeletClientCert: p("apiserver-kubelet-client.crt"),
    kubeletClientKey: p("apiserver-kubelet-client.key"),
    serviceAccountKey: p("sa.key"),
    serviceAccountPub: p("sa.pub"),
    etcdCaCert: p("etcd-ca.crt"),
    etcdServerCert: p("etcd-server.crt"),
    etcdServerKey: p("etcd-server.key"),
    etcdClientCert: p("apiserver-etcd-client.crt"),
    etcdClientKey: p("apiserver-etcd-client.key"),
  };
}

/** A kubeconfig for `server` with the client certificate and key embedded, as kubeadm writes them. */
export async function clientKubeconfig(
  server: string,
  caCert: string,
  cert: string,
  key: string,
  user: string,
): Promise<string> {
  const b64 = async (f: string) => (await readFile(f)).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: winfleet-local",
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${await b64(caCert)}`,
    "users:",
    `- name: ${user}`,
    "  user:",
    `    client-certificate-data: ${await b64(cert)}`,
    `    client-key-data: ${await b64(key)}`,
    "contexts:",
    `- name: ${user}@winfleet-local`,
    "  context:",
    "    cluster: winfleet-local",
    `    user: ${user}`,
    `current-context: ${user}@winfleet-local`,
    "",
  ].join("\n");
}
