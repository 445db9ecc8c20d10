import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { stringify as toYaml } from "yaml";
import { parseFleetConfig } from "./config";
import { type Check, exitCodeOf, formatReport } from "./preflight";
import { stackChecks } from "./preflight-stack";
import type { StackFile } from "./stack-file";

const dir = mkdtempSync(join(tmpdir(), "winfleet-preflight-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const fleet = {
  cluster: {
    name: "prod",
    kubeContext: "prod-admin",
    join: {
      method: "kubeadm",
      apiServer: "https://10.0.0.4:6443",
      caCertHash: `sha256:${"a".repeat(64)}`,
      tokenId: "prod01",
      tokenSecret: "joinToken",
      tokenExpiry: "2027-03-01T00:00:00Z",
    },
  },
  content: {
    template: "win2022",
    templateVersion: "1.0.0",
    publish: { to: "blob", resourceGroup: "rg", storageAccount: "fleetcontent" },
    keyVault:
      "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv-fleet",
  },
  agent: {
    version: "0.1.0",
    bundle: { url: "https://fleetcontent.blob.core.windows.net/r/a.tgz", sha256: "b".repeat(64) },
  },
  pools: [
    {
      name: "win",
      kind: "azure",
      location: "westeurope",
      resourceGroup: "rg",
      subnetId:
        "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes",
      count: 2,
      adminPasswordSecret: "adminPassword",
    },
  ],
};

const stackOf = (name: string, f: unknown, secrets: Record<string, unknown> = {}): StackFile => ({
  stack: name,
  file: join(dir, `Pulumi.${name}.yaml`),
  fleet: parseFleetConfig(f),
  rawFleet: f,
  secrets,
});
const secured = { adminPassword: { secure: "v1:x" }, joinToken: { secure: "v1:y" } };
const kubeconfig = join(dir, "kubeconfig");
writeFileSync(
  kubeconfig,
  toYaml({
    apiVersion: "v1",
    "current-context": "laptop",
    clusters: [
      { name: "prod", cluster: { server: "https://10.0.0.4:6443" } },
      { name: "lab", cluster: { server: "https://192.168.1.10:6443" } },
    ],
    users: [{ name: "admin", user: { token: "t" } }],
    contexts: [
      { name: "prod-admin", context: { cluster: "prod", user: "admin" } },
      { name: "laptop", context: { cluster: "lab", user: "admin" } },
    ],
  }),
);
const NOW = new Date("2027-01-01T00:00:00Z");

function run(
  f: unknown,
  o: { secrets?: Record<string, unknown>; text?: string; others?: StackFile[]; now?: Date; kubeconfig?: string } = {},
): Check[] {
  return stackChecks({
    stack: stackOf("prod", f, o.secrets ?? secured),
    text: o.text ?? "config: {}\n",
    others: o.others ?? [],
    now: o.now ?? NOW,
    kubeconfig: o.kubeconfig ?? kubeconfig,
  });
}
const of = (checks: Check[], name: string): string[] =>
  (checks.find((c) => c.name === name)?.findings ?? []).map((f) => `${f.level}: ${f.message}`);
const edit = (change: (f: typeof fleet) => void): typeof fleet => {
  const f = structuredClone(fleet);
  change(f);
  return f;
};

describe("the offline preflight", () => {
  it("passes a ready stack, and says so", () => {
    const checks = run(fleet);
    assert.deepEqual(
      checks.flatMap((c) => c.findings),
      [],
    );
    assert.equal(exitCodeOf(checks), 0);
    assert.match(
      formatReport("prod", checks),
      /^preflight of stack prod\n {2}ok {7}secrets: [^\n]+\n[\s\S]*\n0 problems, 0 warnings\n$/,
    );
  });

  it("names each secure key that is missing or in plain text, with the command that sets it", () => {
    const checks = run(fleet, { secrets: { adminPassword: "hunter2" } });
    assert.deepEqual(of(checks, "secrets"), [
      "problem: winfleet:adminPassword is in the stack file in plain text",
      "problem: the secure key winfleet:joinToken is not set",
    ]);
    assert.match(
      checks.find((c) => c.name === "secrets")?.findings[1]?.fix ?? "",
      /^pulumi config set --secret winfleet:joinToken '<value>' -s prod$/,
    );
    assert.equal(exitCodeOf(checks), 1);
  });

  it("finds REPLACE markers, zero digests and the all-zero subscription", () => {
    const zero = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers";
    const f = edit((x) => {
      x.agent.bundle.sha256 = "0".repeat(64);
      x.content.keyVault = `${zero}/Microsoft.KeyVault/vaults/kv-fleet`;
      x.pools[0]!.subnetId = `${zero}/Microsoft.Network/virtualNetworks/v/subnets/nodes`;
    });
    assert.deepEqual(of(run(f, { text: "config:\n  # REPLACE: the API server\n  x: 1\n" }), "placeholders"), [
      "problem: line 2 still marks a value to replace: # REPLACE: the API server",
      "problem: winfleet:fleet.agent.bundle.sha256 is all zeros",
      "problem: winfleet:fleet.pools[0].subnetId names the all-zero subscription",
      "problem: winfleet:fleet.content.keyVault names the all-zero subscription",
    ]);
  });

  it("warns of a token without an expiry or one about to expire, and refuses one that has", () => {
    const at = (tokenExpiry?: string): string[] =>
      of(
        run(
          edit((x) => {
            if (tokenExpiry) x.cluster.join.tokenExpiry = tokenExpiry;
            else delete (x.cluster.join as { tokenExpiry?: string }).tokenExpiry;
          }),
        ),
        "token-expiry",
      );
    assert.deepEqual(at("2027-03-01T00:00:00Z"), []);
    assert.deepEqual(at("2027-01-04T00:00:00Z"), [
      "warning: the bootstrap token prod01 expires at 2027-01-04T00:00:00Z, in 3 days",
    ]);
    assert.deepEqual(at("2026-12-31T00:00:00Z"), [
      "problem: the bootstrap token prod01 expired at 2026-12-31T00:00:00Z",
    ]);
    assert.match(at(undefined)[0] ?? "", /^warning: the bootstrap token prod01 never expires/);
    const sas = edit((x) => {
      Object.assign(x.content.publish, { auth: "sas", sasExpiry: "2026-06-30T00:00:00Z" });
      x.agent.bundle.url = "https://example.test/a.tgz";
    });
    assert.deepEqual(of(run(sas), "token-expiry"), ["problem: the content SAS expired at 2026-06-30T00:00:00Z"]);
  });

  it("finds what another stack of the folder shares with this one: the namespace, the content container, a host", () => {
    const same = stackOf(
      "staging",
      edit((x) => {
        x.cluster.name = "staging";
        (x.cluster as Record<string, unknown>).namespace = "winfleet-prod";
      }),
      secured,
    );
    const found = of(run(fleet, { others: [same] }), "names");
    assert.equal(found.length, 2, found.join("\n"));
    assert.match(found[0] ?? "", /stack staging .* the same namespace winfleet-prod/);
    assert.match(found[1] ?? "", /the same container fleetcontent\/winfleet/);
    // Left to their defaults, two stacks' namespaces differ; their token ids always do.
    const defaults = stackOf(
      "staging",
      edit((x) => (x.cluster.name = "staging")),
      secured,
    );
    assert.deepEqual(
      of(run(fleet, { others: [defaults] }), "names").filter((x) => /namespace|token/.test(x)),
      [],
    );
    const apart = stackOf(
      "lab",
      edit((x) => {
        x.cluster.join.apiServer = "https://192.168.1.10:6443";
        (x.content.publish as Record<string, unknown>).container = "lab";
      }),
    );
    assert.deepEqual(of(run(fleet, { others: [apart] }), "names"), []);
  });

  it("says which cluster the kube context reaches: a missing context, none named, one that is not where nodes join", () => {
    assert.deepEqual(of(run(fleet), "kube-context"), []);
    const unnamed = of(run(edit((x) => delete (x.cluster as { kubeContext?: string }).kubeContext)), "kube-context");
    assert.match(
      unnamed[0] ?? "",
      /^warning: the stack names no kube context, so it deploys to the kubeconfig's current one \(laptop\)/,
    );
    assert.match(
      unnamed[1] ?? "",
      /^warning: context laptop reaches https:\/\/192\.168\.1\.10:6443, but nodes join 10\.0\.0\.4/,
    );
    assert.deepEqual(of(run(edit((x) => (x.cluster.kubeContext = "gone"))), "kube-context"), [
      `problem: ${kubeconfig} has no context gone`,
    ]);
    assert.deepEqual(of(run(fleet, { kubeconfig: join(dir, "absent") }), "kube-context"), [
      `problem: there is no kubeconfig at ${join(dir, "absent")}`,
    ]);
  });
});
