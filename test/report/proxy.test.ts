/**
 * A kubeconfig's `proxy-url` against real proxies on loopback: tinyproxy (HTTP
 * CONNECT and absolute-form requests, Basic proxy credentials), tinyproxy
 * behind socat's TLS (an https proxy), and microsocks (SOCKS5, RFC 1929
 * credentials). The API server is real HTTPS with certificates openssl made for
 * this run, so the tests show TLS to the server running end to end inside the
 * tunnel, and each proxy's log shows the request went through it.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { stringify } from "yaml";
import { ValidationError } from "../../agent/common/errors";
import { execClusterInfo, loadKubeconfig } from "../../agent/report/kubeconfig";
import { type NodeApi, NodeApiError, nodeApiFromKubeconfig } from "../../agent/report/node-api";
import { type Pki, apiServer, makePki } from "./tls-fixtures";
import {
  freePort,
  locate,
  MICROSOCKS,
  portOpen,
  skipUnlessInstalled,
  SOCAT,
  tempDir,
  TINYPROXY,
  type Tool,
  waitFor,
} from "../support";

const skip = skipUnlessInstalled(TINYPROXY, MICROSOCKS, SOCAT);
const dir = tempDir("winfleet-proxy-");
const children: ChildProcess[] = [];
let pki: Pki;

before(() => {
  if (!skip) pki = makePki(dir);
});
after(() => {
  for (const c of children) c.kill();
  rmSync(dir, { recursive: true, force: true });
});

/** Resolves once `port` accepts a connection; gives up after 5 s, or when `child` exits first. */
async function listening(port: number, child: ChildProcess): Promise<void> {
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`${child.spawnfile} exited with ${child.exitCode}`);
      return portOpen(port);
    },
    5000,
    `something to listen on ${port}`,
  );
}

/** Starts `tool`, kept until the tests end; resolves once it listens on `port`. */
async function run(tool: Tool, args: string[], port: number): Promise<ChildProcess> {
  const child = spawn(locate(tool) ?? tool.command, args, { stdio: "ignore" });
  children.push(child);
  await listening(port, child);
  return child;
}

let proxies = 0;
/** tinyproxy on a fresh port, with Basic credentials when given; `log()` is what it logged. */
async function tinyproxy(credentials?: {
  user: string;
  password: string;
}): Promise<{ port: number; log: () => string }> {
  const port = await freePort();
  const log = join(dir, `tinyproxy-${++proxies}.log`);
  const conf = join(dir, `tinyproxy-${proxies}.conf`);
  // No ConnectPort line: CONNECT to any port (the API server's is random here).
  writeFileSync(
    conf,
    [
      `Port ${port}`,
      "Listen 127.0.0.1",
      "Timeout 10",
      `LogFile "${log}"`,
      "LogLevel Connect",
      "Allow 127.0.0.1",
      "DisableViaHeader Yes",
      ...(credentials ? [`BasicAuth ${credentials.user} ${credentials.password}`] : []),
    ].join("\n"),
  );
  await run(TINYPROXY, ["-d", "-c", conf], port);
  return { port, log: () => (existsSync(log) ? readFileSync(log, "utf8") : "") };
}

/**
 * socat terminating TLS with `cert` on a fresh port and passing the bytes to
 * `port`: an https proxy in front of an HTTP one; with `demandClientCert`, it
 * insists on a client certificate the cluster's CA signed.
 */
async function tlsFront(port: number, cert: string, demandClientCert = false): Promise<number> {
  const front = await freePort();
  const verify = demandClientCert ? `verify=1,cafile=${join(pki.dir, "ca.crt")}` : "verify=0";
  await run(
    SOCAT,
    [
      `OPENSSL-LISTEN:${front},bind=127.0.0.1,reuseaddr,fork,cert=${join(pki.dir, `${cert}.crt`)},key=${join(pki.dir, `${cert}.key`)},${verify}`,
      `TCP:127.0.0.1:${port}`,
    ],
    front,
  );
  return front;
}

/** microsocks on a fresh port, requiring the credentials when given. */
async function microsocks(credentials?: { user: string; password: string }): Promise<number> {
  const port = await freePort();
  await run(
    MICROSOCKS,
    [
      "-i",
      "127.0.0.1",
      "-p",
      String(port),
      ...(credentials ? ["-u", credentials.user, "-P", credentials.password] : []),
    ],
    port,
  );
  return port;
}

let n = 0;
/** A kubeconfig for `cluster` with the node's client certificate; returns its path. */
function kubeconfig(
  cluster: Record<string, unknown>,
  user: Record<string, unknown> = { "client-certificate": "node.crt", "client-key": "node.key" },
): string {
  const file = join(dir, `kubeconfig-${++n}`);
  writeFileSync(
    file,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster }],
      users: [{ name: "u", user }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  return file;
}

const patch = (api: NodeApi): Promise<void> => api.patchNode("win-node-1", { metadata: { annotations: { a: "b" } } });
const unreachable = (message: RegExp) => (e: unknown) =>
  e instanceof NodeApiError && e.status === undefined && e.retryable && message.test(e.message);

describe("a kubeconfig's proxy-url, through real proxies", { skip }, () => {
  it("tunnels to an https API server through an HTTP proxy's CONNECT, TLS verified end to end and the client certificate shown to the server", async () => {
    const api = await apiServer(pki);
    const proxy = await tinyproxy();
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig({
          server: api.url,
          "certificate-authority": "ca.crt",
          "proxy-url": `http://127.0.0.1:${proxy.port}`,
        }),
        5000,
      ),
    );
    await api.close();
    assert.equal(api.seen[0]?.client, "system:node:win-node-1");
    assert.equal(api.seen[0]?.url, "/api/v1/nodes/win-node-1");
    assert.match(
      proxy.log(),
      new RegExp(`Request \\(file descriptor \\d+\\): CONNECT 127\\.0\\.0\\.1:${api.port} HTTP/1\\.1`),
    );
  });

  it("does not let the proxy stand in for the server: the server is checked against the kubeconfig's CA inside the tunnel", async () => {
    const api = await apiServer(pki);
    const proxy = await tinyproxy();
    const node = await nodeApiFromKubeconfig(
      kubeconfig(
        { server: api.url, "certificate-authority": "other-ca.crt", "proxy-url": `http://127.0.0.1:${proxy.port}` },
        { token: "t" },
      ),
      5000,
    );
    await assert.rejects(patch(node), unreachable(/certificate/i));
    await api.close();
    assert.deepEqual(api.seen, []);
    assert.match(proxy.log(), /CONNECT 127\.0\.0\.1/);
  });

  it("sends the URL's credentials as Proxy-Authorization; the proxy's refusal names the proxy and never the password", async () => {
    const api = await apiServer(pki);
    const proxy = await tinyproxy({ user: "node", password: "s3cret" });
    const at = (auth: string): string =>
      kubeconfig({
        server: api.url,
        "certificate-authority": "ca.crt",
        "proxy-url": `http://${auth}127.0.0.1:${proxy.port}`,
      });
    await patch(await nodeApiFromKubeconfig(at("node:s3cret@"), 5000));
    for (const wrong of ["node:wrong%2Fpw@", ""]) {
      const refused = patch(await nodeApiFromKubeconfig(at(wrong), 5000));
      await assert.rejects(
        refused,
        unreachable(
          new RegExp(
            `^PATCH /api/v1/nodes/win-node-1: proxy 127\\.0\\.0\\.1:${proxy.port}: refused CONNECT 127\\.0\\.0\\.1:${api.port}: HTTP/1\\.[01] 40[17]`,
          ),
        ),
      );
      await refused.catch((e: Error) => assert.doesNotMatch(e.message, /wrong/));
    }
    await api.close();
    assert.equal(api.seen.length, 1);
  });

  it("asks an HTTP proxy for a plain-http API server's request in absolute form, carrying the credentials", async () => {
    const api = await apiServer(pki, { plain: true });
    const proxy = await tinyproxy({ user: "node", password: "pw" });
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig(
          { server: `${api.url}/prefix`, "proxy-url": `http://node:pw@127.0.0.1:${proxy.port}` },
          { token: "t" },
        ),
        5000,
      ),
    );
    await api.close();
    assert.equal(api.seen[0]?.url, "/prefix/api/v1/nodes/win-node-1");
    assert.equal(api.seen[0]?.headers.authorization, "Bearer t");
    assert.equal(api.seen[0]?.headers["proxy-authorization"], undefined, "the proxy's credentials stop at the proxy");
    assert.match(
      proxy.log(),
      new RegExp(
        `Request \\(file descriptor \\d+\\): PATCH http://127\\.0\\.0\\.1:${api.port}/prefix/api/v1/nodes/win-node-1 HTTP/1\\.1`,
      ),
    );
  });

  it("verifies an https proxy against the cluster's CA under the proxy's own name, and shows it no client certificate", async () => {
    const api = await apiServer(pki);
    const proxy = await tinyproxy();
    const good = await tlsFront(proxy.port, "server");
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig({ server: api.url, "certificate-authority": "ca.crt", "proxy-url": `https://127.0.0.1:${good}` }),
        5000,
      ),
    );
    assert.equal(api.seen[0]?.client, "system:node:win-node-1");
    // A certificate the CA signed for another name: the proxy is refused before anything is sent through it.
    const wrongName = await tlsFront(proxy.port, "named-server");
    const node = await nodeApiFromKubeconfig(
      kubeconfig({ server: api.url, "certificate-authority": "ca.crt", "proxy-url": `https://127.0.0.1:${wrongName}` }),
      5000,
    );
    await assert.rejects(
      patch(node),
      unreachable(new RegExp(`proxy 127\\.0\\.0\\.1:${wrongName}: .*(altnames|not in the cert's list)`)),
    );
    // A proxy that insists on the node's certificate does not get it, though the node has one the proxy would accept.
    const demanding = await tlsFront(proxy.port, "server", true);
    const withCert = await nodeApiFromKubeconfig(
      kubeconfig({ server: api.url, "certificate-authority": "ca.crt", "proxy-url": `https://127.0.0.1:${demanding}` }),
      5000,
    );
    await assert.rejects(patch(withCert), unreachable(new RegExp(`proxy 127\\.0\\.0\\.1:${demanding}: `)));
    await api.close();
    assert.equal(api.seen.length, 1);
    assert.equal(proxy.log().match(/CONNECT 127/g)?.length, 1);
  });

  it("goes through a SOCKS5 proxy with username and password, to an address or a host name the proxy resolves (IPv4, IPv6, name)", async () => {
    const creds = { user: "node", password: "p@ss" };
    const socks = await microsocks(creds);
    const proxyUrl = `socks5://node:p%40ss@127.0.0.1:${socks}`;
    const tlsApi = await apiServer(pki);
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig({ server: tlsApi.url, "certificate-authority": "ca.crt", "proxy-url": proxyUrl }),
        5000,
      ),
    );
    await tlsApi.close();
    assert.equal(tlsApi.seen[0]?.client, "system:node:win-node-1");
    // Dual-stack, so that localhost resolves to a listening address whichever the proxy picks.
    const api = await apiServer(pki, { plain: true, host: "::" });
    for (const host of ["localhost", "[::1]", "127.0.0.1"]) {
      await patch(
        await nodeApiFromKubeconfig(
          kubeconfig({ server: `http://${host}:${api.port}`, "proxy-url": proxyUrl }, { token: "t" }),
          5000,
        ),
      );
    }
    await api.close();
    assert.deepEqual(
      api.seen.map((s) => s.headers.host),
      [`localhost:${api.port}`, `[::1]:${api.port}`, `127.0.0.1:${api.port}`],
    );
  });

  it("names what a SOCKS5 proxy refused: the credentials, their absence, or the connection", async () => {
    const socks = await microsocks({ user: "node", password: "pw" });
    const closed = await freePort();
    const cases: [string, RegExp][] = [
      [`socks5://node:nope@127.0.0.1:${socks}`, /refused the username and password/],
      [`socks5://127.0.0.1:${socks}`, /asks for credentials, and proxy-url gives none/],
      [
        `socks5://node:pw@127.0.0.1:${socks}`,
        new RegExp(`refused a connection to 127\\.0\\.0\\.1:${closed}: (connection refused|general failure)`),
      ],
    ];
    for (const [proxyUrl, message] of cases) {
      const node = await nodeApiFromKubeconfig(
        kubeconfig({ server: `https://127.0.0.1:${closed}`, "certificate-authority": "ca.crt", "proxy-url": proxyUrl }),
        5000,
      );
      const failed = patch(node);
      await assert.rejects(failed, unreachable(new RegExp(`proxy 127\\.0\\.0\\.1:${socks}: ${message.source}`)));
      await failed.catch((e: Error) => assert.doesNotMatch(e.message, /nope|:pw@/));
    }
  });

  it("fails, retryably and naming the proxy, when the proxy cannot be reached", async () => {
    const closed = await freePort();
    for (const scheme of ["http", "https", "socks5"]) {
      const node = await nodeApiFromKubeconfig(
        kubeconfig({
          server: "https://127.0.0.1:6443",
          "certificate-authority": "ca.crt",
          "proxy-url": `${scheme}://u:secret@127.0.0.1:${closed}`,
        }),
        5000,
      );
      const failed = patch(node);
      await assert.rejects(failed, unreachable(new RegExp(`proxy 127\\.0\\.0\\.1:${closed}: connect ECONNREFUSED`)));
      await failed.catch((e: Error) => assert.doesNotMatch(e.message, /secret/));
    }
  });
});

describe("a proxy-url in what an exec plugin is told", () => {
  it("is part of the cluster a plugin asks for (provideClusterInfo), as client-go gives it", () => {
    const info = execClusterInfo(
      loadKubeconfig(kubeconfig({ server: "https://127.0.0.1:6443", "proxy-url": "socks5://127.0.0.1:1080" })),
    );
    assert.deepEqual(info, { server: "https://127.0.0.1:6443", "proxy-url": "socks5://127.0.0.1:1080" });
  });
});

describe("a proxy-url the agent cannot use", () => {
  it("is refused by its path, without repeating credentials it may hold", () => {
    const cases: [string, RegExp][] = [
      ["socks4://proxy:1080", /socks4: is not one of http:, https:, socks5:/],
      ["proxy.example:3128", /is not one of/],
      ["http://user:secret@:3128", /not a URL/],
      ["http://proxy:3128/path", /has a path/],
    ];
    for (const [url, message] of cases) {
      assert.throws(
        () => loadKubeconfig(kubeconfig({ server: "https://127.0.0.1:6443", "proxy-url": url })),
        (e: unknown) =>
          e instanceof ValidationError &&
          e.issues.some(
            (i) =>
              i.path === "clusters[0].cluster.proxy-url" && message.test(i.message) && !i.message.includes("secret"),
          ),
        url,
      );
    }
  });
});
