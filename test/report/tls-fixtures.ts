/**
 * Real X.509 material for the kubeconfig tests, made by openssl at test time
 * (nothing checked in expires): a cluster CA, an API server certificate for
 * 127.0.0.1, one valid only for the name `kube.test`, node client certificates
 * the CA signed, and a second CA that signed nothing the server uses; and an
 * API server on loopback that presents them and records what it was sent.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";

/** PEM files in one directory; `read` gives a file's bytes. */
export interface Pki {
  readonly dir: string;
  readonly read: (name: string) => Buffer;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
}

function ca(dir: string, name: string): void {
  openssl(
    dir,
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-subj",
    `/CN=${name}`,
  );
}

function signed(dir: string, name: string, subject: string, ext: string, by = "ca"): void {
  writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
  openssl(
    dir,
    "req",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  );
  openssl(
    dir,
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    `${by}.crt`,
    "-CAkey",
    `${by}.key`,
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "2",
    "-extfile",
    `${name}.ext`,
  );
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

/** What an API server saw of one request. */
export interface Seen {
  readonly method: string;
  readonly url: string;
  /** The CN of the client certificate the server verified, if one was shown. */
  readonly client: string | undefined;
  readonly headers: IncomingMessage["headers"];
}

/** Options for {@link apiServer}. */
export interface ApiServerOptions {
  /** The certificate it presents (a name `makePki` made). @default "server" */
  readonly cert?: string;
  /** Bearer tokens answered with 401. */
  readonly refuse?: readonly string[];
  /** Plain HTTP instead of TLS. */
  readonly plain?: boolean;
  /** The address it listens on. @default "127.0.0.1" */
  readonly host?: string;
}

/**
 * An API server on loopback that records each request and answers `{}`; over
 * TLS it asks for a client certificate and records whom the CA vouches for.
 */
export async function apiServer(
  pki: Pki,
  o: ApiServerOptions = {},
): Promise<{ url: string; port: number; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    req.resume();
    req.on("end", () => {
      const socket = req.socket as TLSSocket;
      const client =
        o.plain || !socket.authorized ? undefined : (socket.getPeerCertificate().subject?.CN as string | undefined);
      seen.push({ method: req.method ?? "", url: req.url ?? "", client, headers: req.headers });
      const denied = (o.refuse ?? []).some((t) => req.headers.authorization === `Bearer ${t}`);
      res.writeHead(denied ? 401 : 200, { "content-type": "application/json" }).end("{}");
    });
  };
  const cert = o.cert ?? "server";
  const s = o.plain
    ? createHttpServer(handle)
    : createHttpsServer(
        {
          key: pki.read(`${cert}.key`),
          cert: pki.read(`${cert}.crt`),
          ca: pki.read("ca.crt"),
          requestCert: true,
          rejectUnauthorized: false,
        },
        handle,
      );
  await new Promise<void>((r) => s.listen(0, o.host ?? "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  return {
    url: `${o.plain ? "http" : "https"}://127.0.0.1:${port}`,
    port,
    seen,
    close: () => new Promise((r) => s.close(() => r())),
  };
}
