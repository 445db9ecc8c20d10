/**
 * The node's kubeconfig against a real HTTPS API server on loopback, with
 * certificates openssl made for this run: the server is verified against the
 * kubeconfig's CA (or its name, or not at all when told), the node proves who
 * it is with a client certificate, a token, a token file or an exec plugin
 * (real processes), rotated files are read again, and every setting the agent
 * cannot honour is refused by the path of the value.
 */
import assert from "node:assert/strict";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { stringify } from "yaml";
import { ValidationError } from "../../agent/common/errors";
import { credentialsFor, loadKubeconfig } from "../../agent/report/kubeconfig";
import { type NodeApi, NodeApiError, nodeApiFromKubeconfig } from "../../agent/report/node-api";
import { type Pki, makePki, apiServer as server } from "./tls-fixtures";
import { scratchDir } from "../support";

const dir = scratchDir("winfleet-kubeconfig-");
let pki: Pki;

let n = 0;
/** Writes a kubeconfig with one cluster, one user and a current context; returns its path. */
function kubeconfig(
  cluster: Record<string, unknown>,
  user: Record<string, unknown>,
  extra: Record<string, unknown> = {},
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
      ...extra,
    }),
  );
  return file;
}

const patch = (api: NodeApi): Promise<void> => api.patchNode("win-node-1", { metadata: { annotations: { a: "b" } } });
const b64 = (name: string): string => pki.read(name).toString("base64");

/**
 * An exec plugin: a sh script printing `body` (with $N for the count of runs so far), logging its env to `<name>.env`.
 */
function plugin(name: string, body: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `#!/bin/sh\nn=$(($(cat "$0.count" 2>/dev/null || echo 0) + 1)); echo $n > "$0.count"\nprintf '%s' "$KUBERNETES_EXEC_INFO" > "$0.info"; env > "$0.env"\n${body}\n`,
  );
  chmodSync(file, 0o755);
  return file;
}
const BETA = "client.authentication.k8s.io/v1beta1";
const runs = (file: string): number => Number(readFileSync(`${file}.count`, "utf8"));
const credential = (status: Record<string, unknown>, apiVersion = "client.authentication.k8s.io/v1"): string =>
  `cat <<'EOF'\n${JSON.stringify({ apiVersion, kind: "ExecCredential", status })}\nEOF`;

before(() => {
  pki = makePki(dir);
});

describe("the node's kubeconfig over TLS", () => {
  it("verifies the server against the CA file and presents the node's client certificate (paths relative to the kubeconfig)", async () => {
    const api = await server(pki);
    const file = kubeconfig(
      { server: api.url, "certificate-authority": "ca.crt" },
      { "client-certificate": "node.crt", "client-key": "node.key" },
    );
    await patch(await nodeApiFromKubeconfig(file, 2000));
    await api.close();
    assert.equal(api.seen[0]?.client, "system:node:win-node-1");
    assert.equal(api.seen[0]?.url, "/api/v1/nodes/win-node-1");
  });

  it("takes the same material inline as -data, and a server with a path prefix keeps it", async () => {
    const api = await server(pki);
    const file = kubeconfig(
      { server: `${api.url}/k8s/clusters/c-1/`, "certificate-authority-data": b64("ca.crt") },
      { "client-certificate-data": b64("node.crt"), "client-key-data": b64("node.key") },
    );
    await patch(await nodeApiFromKubeconfig(file, 2000));
    await api.close();
    assert.equal(api.seen[0]?.client, "system:node:win-node-1");
    assert.equal(api.seen[0]?.url, "/k8s/clusters/c-1/api/v1/nodes/win-node-1");
  });

  it("reads a rotated client certificate at the next request, without a new API object", async () => {
    const api = await server(pki);
    writeFileSync(join(dir, "current.pem"), Buffer.concat([pki.read("node.crt"), pki.read("node.key")]));
    const file = kubeconfig(
      { server: api.url, "certificate-authority": join(dir, "ca.crt") },
      { "client-certificate": "current.pem", "client-key": "current.pem" },
    );
    const node = await nodeApiFromKubeconfig(file, 2000);
    await patch(node);
    writeFileSync(
      join(dir, "current.pem"),
      Buffer.concat([pki.read("node-rotated.crt"), pki.read("node-rotated.key")]),
    );
    await patch(node);
    await api.close();
    assert.deepEqual(
      api.seen.map((s) => s.client),
      ["system:node:win-node-1", "system:node:win-node-1-rotated"],
    );
  });

  it("refuses a server the CA did not sign, and the system's CAs do not vouch for it either; nothing reaches it", async () => {
    const api = await server(pki);
    for (const cluster of [{ server: api.url, "certificate-authority": "other-ca.crt" }, { server: api.url }]) {
      const node = await nodeApiFromKubeconfig(kubeconfig(cluster, { token: "t" }), 2000);
      await assert.rejects(
        patch(node),
        (e: NodeApiError) => e instanceof NodeApiError && e.status === undefined && /certificate/i.test(e.message),
      );
    }
    await api.close();
    assert.deepEqual(api.seen, []);
  });

  it("checks the name tls-server-name gives, not the address, and skips verification only when told", async () => {
    const api = await server(pki, { cert: "named-server" });
    const wrongName = await nodeApiFromKubeconfig(
      kubeconfig({ server: api.url, "certificate-authority": "ca.crt" }, { token: "t" }),
      2000,
    );
    await assert.rejects(patch(wrongName), /IP: 127\.0\.0\.1 is not in the cert's list|altnames/);
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig(
          { server: api.url, "certificate-authority": "ca.crt", "tls-server-name": "kube.test" },
          { token: "t" },
        ),
        2000,
      ),
    );
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig({ server: api.url, "insecure-skip-tls-verify": true }, { token: "t2" }),
        2000,
      ),
    );
    await api.close();
    assert.deepEqual(
      api.seen.map((s) => s.headers.authorization),
      ["Bearer t", "Bearer t2"],
    );
  });
});

describe("the node's kubeconfig credentials", () => {
  it("reads a tokenFile at each request; a token beside it wins, as in client-go", async () => {
    const api = await server(pki);
    writeFileSync(join(dir, "token"), "first\n");
    const node = await nodeApiFromKubeconfig(
      kubeconfig({ server: api.url, "certificate-authority": "ca.crt" }, { tokenFile: "token" }),
      2000,
    );
    await patch(node);
    writeFileSync(join(dir, "token"), "second\n");
    await patch(node);
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig({ server: api.url, "certificate-authority": "ca.crt" }, { tokenFile: "token", token: "inline" }),
        2000,
      ),
    );
    await api.close();
    assert.deepEqual(
      api.seen.map((s) => s.headers.authorization),
      ["Bearer first", "Bearer second", "Bearer inline"],
    );
  });

  it("sends basic auth and impersonation headers", async () => {
    const api = await server(pki);
    const user = {
      username: "admin",
      password: "pw",
      as: "system:node:win-node-1",
      "as-groups": ["system:nodes", "extra"],
      "as-uid": "42",
      "as-user-extra": { "scopes.example": ["a", "b"] },
    };
    await patch(
      await nodeApiFromKubeconfig(kubeconfig({ server: api.url, "certificate-authority": "ca.crt" }, user), 2000),
    );
    await api.close();
    const h = api.seen[0]?.headers;
    assert.equal(h?.authorization, `Basic ${Buffer.from("admin:pw").toString("base64")}`);
    assert.equal(h?.["impersonate-user"], "system:node:win-node-1");
    assert.equal(h?.["impersonate-group"], "system:nodes, extra");
    assert.equal(h?.["impersonate-uid"], "42");
    assert.equal(h?.["impersonate-extra-scopes.example"], "a, b");
  });

  it("runs an exec plugin once for a token it keeps, with the cluster and env it asks for, non-interactive", async () => {
    const api = await server(pki);
    const cmd = plugin("token-plugin", credential({ token: "exec-token-$n" }).replace("'EOF'", "EOF"));
    const exec = {
      apiVersion: "client.authentication.k8s.io/v1",
      command: "./token-plugin",
      args: ["get-token"],
      env: [{ name: "PLUGIN_MODE", value: "node" }],
      interactiveMode: "Never",
      provideClusterInfo: true,
    };
    const node = await nodeApiFromKubeconfig(
      kubeconfig(
        {
          server: api.url,
          "certificate-authority": "ca.crt",
          extensions: [{ name: "client.authentication.k8s.io/exec", extension: { audience: "aks" } }],
        },
        { exec },
      ),
      2000,
    );
    for (let i = 0; i < 3; i++) await patch(node);
    await api.close();
    assert.equal(runs(cmd), 1);
    assert.deepEqual(
      api.seen.map((s) => s.headers.authorization),
      ["Bearer exec-token-1", "Bearer exec-token-1", "Bearer exec-token-1"],
    );
    const info = JSON.parse(readFileSync(`${cmd}.info`, "utf8")) as {
      spec: { interactive: boolean; cluster: Record<string, unknown> };
    };
    assert.equal(info.spec.interactive, false);
    assert.deepEqual(info.spec.cluster, {
      server: api.url,
      "certificate-authority-data": b64("ca.crt"),
      config: { audience: "aks" },
    });
    assert.match(readFileSync(`${cmd}.env`, "utf8"), /^PLUGIN_MODE=node$/m);
  });

  it("runs the plugin again once its credential expires, and when the server answers 401", async () => {
    const api = await server(pki, { refuse: ["exec-token-1"] });
    const past = new Date(Date.now() - 60_000).toISOString();
    const expiring = plugin(
      "expiring-plugin",
      credential({ token: "t-$n", expirationTimestamp: past }, BETA).replace("'EOF'", "EOF"),
    );
    const beta = { apiVersion: BETA, command: expiring };
    const node = await nodeApiFromKubeconfig(
      kubeconfig({ server: api.url, "certificate-authority": "ca.crt" }, { exec: beta }),
      2000,
    );
    await patch(node);
    await patch(node);
    assert.equal(runs(expiring), 2);
    const revoked = plugin("revoked-plugin", credential({ token: "exec-token-$n" }, BETA).replace("'EOF'", "EOF"));
    const node2 = await nodeApiFromKubeconfig(
      kubeconfig({ server: api.url, "certificate-authority": "ca.crt" }, { exec: { ...beta, command: revoked } }),
      2000,
    );
    await patch(node2);
    await api.close();
    assert.equal(runs(revoked), 2);
    assert.deepEqual(
      api.seen.slice(-2).map((s) => s.headers.authorization),
      ["Bearer exec-token-1", "Bearer exec-token-2"],
    );
  });

  it("presents the client certificate an exec plugin returns", async () => {
    const api = await server(pki);
    const cmd = plugin(
      "cert-plugin",
      credential({
        clientCertificateData: pki.read("node.crt").toString("utf8"),
        clientKeyData: pki.read("node.key").toString("utf8"),
      }),
    );
    await patch(
      await nodeApiFromKubeconfig(
        kubeconfig(
          { server: api.url, "certificate-authority": "ca.crt" },
          { exec: { apiVersion: "client.authentication.k8s.io/v1", command: cmd, interactiveMode: "IfAvailable" } },
        ),
        2000,
      ),
    );
    await api.close();
    assert.equal(api.seen[0]?.client, "system:node:win-node-1");
  });

  it("says what went wrong with a plugin: missing (with its install hint), failing, silent, off-version, slow", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { command: "winfleet-no-such-plugin", installHint: "install it from example.test" },
        /exec plugin winfleet-no-such-plugin: not found\ninstall it from example\.test/,
      ],
      [{ command: plugin("failing", "echo 'login expired' >&2; exit 3") }, /exited 3: login expired/],
      [{ command: plugin("silent", "echo '{}'") }, /no valid ExecCredential/],
      [{ command: plugin("half", credential({ clientCertificateData: "x" })) }, /certificate without its key/],
      [
        { command: plugin("old", credential({ token: "t" }, "client.authentication.k8s.io/v1beta1")) },
        /answered in client\.authentication\.k8s\.io\/v1beta1; the kubeconfig asks for client\.authentication\.k8s\.io\/v1/,
      ],
      [{ command: plugin("slow", "exec sleep 5") }, /gave no answer within 300 ms/],
    ];
    for (const [exec, message] of cases) {
      const node = await nodeApiFromKubeconfig(
        kubeconfig(
          { server: "https://127.0.0.1:9", "certificate-authority": "ca.crt" },
          { exec: { apiVersion: "client.authentication.k8s.io/v1", interactiveMode: "Never", ...exec } },
        ),
        300,
      );
      await assert.rejects(patch(node), message);
    }
  });
});

describe("what the agent will not read from a kubeconfig", () => {
  const refused = (file: string, path: string, message: RegExp): void =>
    assert.throws(
      () => loadKubeconfig(file),
      (e: ValidationError) =>
        e instanceof ValidationError && e.issues.some((i) => i.path === path && message.test(i.message)),
    );
  const ok = { server: "https://127.0.0.1:6443", "certificate-authority": "ca.crt" };

  it("refuses settings it would otherwise ignore, by their path", () => {
    refused(
      kubeconfig({ ...ok, "proxy-url": "socks4://proxy:1080" }, { token: "t" }),
      "clusters[0].cluster.proxy-url",
      /not one of/,
    );
    refused(kubeconfig(ok, { "auth-provider": { name: "azure" } }), "users[0].user.auth-provider", /not supported/);
    refused(
      kubeconfig({ ...ok, "insecure-skip-tls-verify": true }, { token: "t" }),
      "clusters[0].cluster.insecure-skip-tls-verify",
      /together with a certificate authority/,
    );
    refused(kubeconfig(ok, { "client-certificate": "node.crt" }), "users[0].user.client-key", /come together/);
    refused(
      kubeconfig(ok, { exec: { apiVersion: "client.authentication.k8s.io/v1", command: "p" } }),
      "users[0].user.exec.interactiveMode",
      /required/,
    );
    refused(
      kubeconfig(ok, {
        exec: { apiVersion: "client.authentication.k8s.io/v1", command: "p", interactiveMode: "Always" },
      }),
      "users[0].user.exec.interactiveMode",
      /service/,
    );
    refused(
      kubeconfig(ok, { exec: { apiVersion: "client.authentication.k8s.io/v1alpha1", command: "p" } }),
      "users[0].user.exec.apiVersion",
      /removed/,
    );
    refused(kubeconfig({ server: "ftp://x" }, {}), "clusters[0].cluster.server", /not http/);
  });

  it("names the context, cluster or user that is missing", () => {
    refused(kubeconfig(ok, {}, { "current-context": undefined }), "current-context", /not set/);
    refused(kubeconfig(ok, {}, { "current-context": "elsewhere" }), "current-context", /"elsewhere"/);
    refused(
      kubeconfig(ok, {}, { contexts: [{ name: "x", context: { cluster: "gone", user: "u" } }] }),
      "contexts[0].context.cluster",
      /"gone"/,
    );
    refused(
      kubeconfig(ok, {}, { contexts: [{ name: "x", context: { cluster: "c", user: "nobody" } }] }),
      "contexts[0].context.user",
      /"nobody"/,
    );
    const notYaml = join(dir, "not-yaml");
    writeFileSync(notYaml, "clusters: [\n");
    refused(notYaml, "", /not YAML/);
  });
});

describe("agreement with @kubernetes/client-node, the reader this replaced", () => {
  it("gives the same CA, client certificate, key, verification, server name and authorization", async () => {
    const { KubeConfig } = await import("@kubernetes/client-node/dist/config.js");
    const server = "https://127.0.0.1:6443";
    const configs: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        { server, "certificate-authority": "ca.crt" },
        { "client-certificate": "node.crt", "client-key": "node.key" },
      ],
      [
        { server, "certificate-authority-data": b64("ca.crt"), "tls-server-name": "kube.test" },
        { "client-certificate-data": b64("node.crt"), "client-key-data": b64("node.key") },
      ],
      [{ server, "insecure-skip-tls-verify": true }, { token: "abc" }],
      [
        { server, "certificate-authority": join(dir, "ca.crt") },
        { username: "admin", password: "pw" },
      ],
    ];
    for (const [cluster, user] of configs) {
      const file = kubeconfig(cluster, user);
      const theirs = new KubeConfig();
      theirs.loadFromFile(file);
      const o: {
        ca?: Buffer;
        cert?: Buffer;
        key?: Buffer;
        rejectUnauthorized?: boolean;
        servername?: string;
        auth?: string;
        headers?: Record<string, string>;
      } = {};
      await theirs.applyToHTTPSOptions(o);
      const ours = credentialsFor(loadKubeconfig(file));
      const label = JSON.stringify({ cluster, user }).slice(0, 120);
      assert.deepEqual(ours.ca, o.ca ?? undefined, label);
      assert.deepEqual(ours.cert, o.cert ?? undefined, label);
      assert.deepEqual(ours.key, o.key ?? undefined, label);
      assert.equal(ours.rejectUnauthorized, o.rejectUnauthorized ?? true, label);
      assert.equal(ours.servername, o.servername, label);
      const basic = o.auth === undefined ? undefined : `Basic ${Buffer.from(o.auth).toString("base64")}`;
      assert.equal(ours.headers.authorization, o.headers?.Authorization ?? basic, label);
    }
  });
});
