/**
 * `winfleet preflight` as users run it: on the shipped samples (which it refuses, saying what to
 * replace), on a ready stack (which it passes), its usage errors; and its Azure client over real
 * HTTP on loopback, serving Azure's documented answers, with the bearer tokens it is given. The
 * checks against a cluster run against the real control plane (test/cluster/pulumi-credentials.test.ts).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { parseFleetConfig } from "../../infra/config";
import { azureApi, azureChecks } from "../../infra/preflight-azure";
import { STACKS_DIR } from "../../infra/stack-file";
import { freePort, scratchDir } from "../support";

const REPO = join(__dirname, "..", "..");
const scratch = scratchDir("winfleet-preflight-");

function preflight(args: readonly string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(REPO, "bin", "winfleet.js"), "preflight", ...args], {
    cwd: REPO,
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("winfleet preflight", () => {
  it("refuses a shipped sample, naming every placeholder and unset secret with its fix, and lists the checks that need the cloud", () => {
    const r = preflight(["--stack", "rke2", "--kubeconfig", join(scratch, "none")]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /^preflight of stack rke2\n/);
    assert.match(
      r.stdout,
      /problem {2}secrets: the secure key winfleet:rke2Token is not set\n {11}fix: pulumi config set --secret winfleet:rke2Token '<value>' -s rke2\n/,
    );
    assert.match(
      r.stdout,
      /problem {2}placeholders: line \d+ still marks a value to replace: # REPLACE: the RKE2 server's supervisor address/,
    );
    assert.match(r.stdout, /not run {2}cluster-permissions: .*needs the cluster: run with --cluster/);
    assert.match(r.stdout, /not run {2}azure-key-vault: .*needs Azure: run with --azure/);
    assert.match(r.stdout, /\n\d+ problems, \d+ warnings?; 7 checks not run\n$/);
  });

  it("passes a ready stack, offline", () => {
    const doc = parseYaml(readFileSync(join(STACKS_DIR, "Pulumi.byoh.yaml"), "utf8")) as {
      config: Record<string, unknown>;
    };
    const fleet = doc.config["winfleet:fleet"] as Record<string, Record<string, unknown>> & {
      cluster: Record<string, unknown>;
    };
    (fleet.content as Record<string, unknown>).dir = join(REPO, "content");
    (fleet.content as { variables: Record<string, string> }).variables.CALICO_WINDOWS_SHA256 = "1".repeat(64);
    (fleet.content as { variables: Record<string, string> }).variables.CSI_PROXY_SHA256 = "2".repeat(64);
    (fleet.agent as { bundle: { sha256: string } }).bundle.sha256 = "3".repeat(64);
    fleet.cluster.kubeContext = "lab";
    for (const key of ["sshKeyOps", "bootstrapTokenSecret", "calicoKubeconfig"])
      doc.config[`winfleet:${key}`] = { secure: "v1:x" };
    const dir = join(scratch, "ready");
    spawnSync("mkdir", ["-p", dir]);
    writeFileSync(join(dir, "Pulumi.lab.yaml"), toYaml(doc));
    const kubeconfig = join(dir, "kubeconfig");
    writeFileSync(
      kubeconfig,
      toYaml({
        clusters: [{ name: "lab", cluster: { server: "https://192.168.50.10:6443" } }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "lab", context: { cluster: "lab", user: "u" } }],
      }),
    );
    const r = preflight(["--stack", join(dir, "Pulumi.lab.yaml"), "--kubeconfig", kubeconfig]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /ok {7}program: the program declares \d+ resources for the stack/);
    assert.match(r.stdout, /\n0 problems, 0 warnings; 3 checks not run\n$/, "the cluster's; nothing in Azure");
  });

  it("exits 2 without --stack, and says what it checks with --help", () => {
    const usage = preflight([]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /required option '--stack <name>'/);
    const help = preflight(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--stack <name>[\s\S]*--cluster[\s\S]*--azure[\s\S]*--kubeconfig <file>/);
  });
});

describe("the preflight's Azure client", () => {
  let port = 0;
  const seen: string[] = [];
  const SUB = "11111111-1111-1111-1111-111111111111";
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(`${req.headers.authorization ?? ""} ${req.url ?? ""}`);
    const path = (req.url ?? "").split("?")[0] ?? "";
    const body: Record<string, unknown> = {
      [`/subscriptions/${SUB}`]: { subscriptionId: SUB },
      [`/subscriptions/${SUB}/resourceGroups/rg`]: { name: "rg" },
    };
    if (path.endsWith("/providers/Microsoft.Authorization/permissions"))
      body[path] = { value: [{ actions: ["*"], notActions: [], dataActions: ["*"], notDataActions: [] }] };
    else if (path.includes("/subnets/")) body[path] = { properties: { natGateway: { id: "n" } } };
    else if (path.includes("/storageAccounts/")) body[path] = { properties: { allowSharedKeyAccess: true } };
    else if (path.includes("/vaults/")) body[path] = { properties: { enableRbacAuthorization: true } };
    const answer = body[path];
    res.writeHead(answer === undefined ? 404 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(answer ?? { error: { code: "NotFound", message: "not here" } }));
  });
  before(async () => {
    port = await freePort();
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("asks Azure Resource Manager and Key Vault over HTTP with a token for each, and reads their answers", async () => {
    const rg = `/subscriptions/${SUB}/resourceGroups/rg/providers`;
    const fleet = parseFleetConfig({
      cluster: {
        name: "p",
        join: { method: "rke2", server: "https://10.0.0.5:9345", tokenSecret: "t" },
      },
      content: {
        template: "rke2-windows",
        templateVersion: "1.0.0",
        publish: { to: "blob", resourceGroup: "rg", storageAccount: "fleetcontent" },
        keyVault: `${rg}/Microsoft.KeyVault/vaults/kv-fleet`,
      },
      agent: { version: "0.1.0", bundle: { url: "https://example.test/a.tgz", sha256: "b".repeat(64) } },
      pools: [
        {
          name: "win",
          kind: "azure",
          location: "westeurope",
          resourceGroup: "rg",
          subnetId: `${rg}/Microsoft.Network/virtualNetworks/v/subnets/nodes`,
          count: 1,
          adminPasswordSecret: "a",
        },
      ],
    });
    const api = azureApi(
      (resource) => Promise.resolve(resource === "https://vault.azure.net" ? "vault-token" : "arm-token"),
      {
        arm: `http://127.0.0.1:${port}`,
        vault: (name) => `http://127.0.0.1:${port}/vault/${name}`,
      },
    );
    const checks = await azureChecks(api, fleet, "p");
    assert.deepEqual(
      checks.flatMap((c) => c.findings),
      [],
    );
    assert.ok(seen.some((s) => s.startsWith("Bearer arm-token /subscriptions/")));
    assert.ok(
      seen.some((s) =>
        /^Bearer vault-token \/vault\/kv-fleet\/deletedsecrets\/winfleet-p-win-[0-9a-f]{5}\?api-version=7\.4$/.test(s),
      ),
    );
  });
});
