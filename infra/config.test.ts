import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationError } from "../agent/common/errors";
import { azureSubscription, parseFleetConfig, secretKeys } from "./config";

const valid = {
  cluster: {
    name: "dev",
    join: {
      method: "kubeadm",
      apiServer: "https://10.0.0.4:6443",
      caCertHash: `sha256:${"a".repeat(64)}`,
      tokenId: "abcdef",
      tokenSecret: "joinToken",
    },
  },
  content: {
    template: "sandbox",
    templateVersion: "1.0.0",
    publish: { to: "blob", resourceGroup: "rg", storageAccount: "winfleetsa" },
    keyVault: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv-winfleet",
  },
  agent: {
    version: "0.1.0",
    bundle: { url: "https://sa.blob.core.windows.net/winfleet/agent.tgz", sha256: "b".repeat(64) },
  },
  pools: [
    {
      name: "win",
      kind: "azure",
      location: "westeurope",
      resourceGroup: "rg",
      subnetId: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes",
      count: 2,
      adminPasswordSecret: "adminPassword",
    },
  ],
};

function pathsOf(value: unknown): string[] {
  try {
    parseFleetConfig(value);
    return [];
  } catch (e) {
    if (e instanceof ValidationError) return e.issues.map((i) => i.path);
    throw e;
  }
}

/** A real ed25519 public host key, as ssh-keyscan prints it after the address. */
const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICXNVOzIIm1BJv7lEfBEQ5F0Gf3qntI7gbw6dHIL99mE";

describe("stack config", () => {
  it("parses a valid fleet and fills defaults", () => {
    const f = parseFleetConfig(valid);
    const pool = f.pools[0];
    assert.equal(pool?.kind === "azure" && pool.mode, "vmss");
    assert.equal(f.cluster?.namespace, undefined, "the program names it after the stack: winfleet-<stack>");
    assert.deepEqual(secretKeys(f), ["adminPassword", "joinToken"]);
  });

  it("names the key path of every bad value", () => {
    const bad = structuredClone(valid) as typeof valid & { pools: Record<string, unknown>[] };
    (bad.pools[0] as Record<string, unknown>).count = -1;
    (bad.pools[0] as Record<string, unknown>).subnetId = "nodes";
    bad.agent.bundle.sha256 = "XYZ";
    assert.deepEqual(pathsOf(bad).sort(), [
      "winfleet:fleet.agent.bundle.sha256",
      "winfleet:fleet.pools[0].count",
      "winfleet:fleet.pools[0].subnetId",
    ]);
  });

  it("takes kubectl drain's knobs per pool, with its defaults, and names the path of a bad one", () => {
    const withDrain = (drain: unknown) => ({ ...valid, pools: [{ ...valid.pools[0], drain }] });
    const pool = parseFleetConfig(withDrain({ timeoutSeconds: 300 })).pools[0];
    assert.deepEqual(pool?.kind === "azure" && pool.drain, {
      enabled: true,
      timeoutSeconds: 300,
      deleteEmptyDirData: false,
      force: false,
      podSelector: "",
    });
    assert.deepEqual(pathsOf(withDrain({ timeoutSeconds: -1, podSelector: "app in (a", grace: 1 })).sort(), [
      "winfleet:fleet.pools[0].drain",
      "winfleet:fleet.pools[0].drain.podSelector",
      "winfleet:fleet.pools[0].drain.timeoutSeconds",
    ]);
  });

  it("refuses node labels the kubelet refuses at start, naming the label", () => {
    const bad = structuredClone(valid) as typeof valid & { pools: Record<string, unknown>[] };
    (bad.pools[0] as Record<string, unknown>).labels = {
      "node-role.kubernetes.io/worker": "",
      "example.com/team": "a",
      "node.kubernetes.io/pool": "win",
      "topology.kubernetes.io/zone": "z1",
    };
    assert.deepEqual(pathsOf(bad), ["winfleet:fleet.pools[0].labels.node-role.kubernetes.io/worker"]);
    (bad.pools[0] as Record<string, unknown>).labels = { team: "a b" };
    assert.deepEqual(pathsOf(bad), ["winfleet:fleet.pools[0].labels.team"]);
  });

  it("requires exactly one credential per BYO host and unique pool names", () => {
    const byo = {
      ...valid,
      pools: [
        { name: "a", kind: "byo", hosts: [{ name: "h1", address: "10.0.0.5", user: "admin", hostKey: HOST_KEY }] },
        {
          name: "a",
          kind: "byo",
          hosts: [
            {
              name: "h2",
              address: "10.0.0.6",
              user: "admin",
              passwordSecret: "p",
              privateKeySecret: "k",
              hostKey: HOST_KEY,
            },
          ],
        },
      ],
    };
    assert.deepEqual(pathsOf(byo).sort(), [
      "winfleet:fleet.pools[0].hosts[0]",
      "winfleet:fleet.pools[1].hosts[0]",
      "winfleet:fleet.pools[1].name",
    ]);
  });

  it("rejects unknown keys, with their path", () => {
    assert.deepEqual(pathsOf({ ...valid, extra: 1 }), ["winfleet:fleet"]);
  });
});

describe("the Key Vault of Azure nodes' larger secrets", () => {
  const without = (edit: (f: Record<string, Record<string, unknown>>) => void = () => undefined): unknown => {
    const f = structuredClone(valid) as unknown as Record<string, Record<string, unknown>>;
    delete (f.content as Record<string, unknown>).keyVault;
    edit(f);
    return f;
  };

  it("is required, naming it, when an Azure pool has secrets beyond its join token (kube-proxy's token on kubeadm, content secrets)", () => {
    assert.deepEqual(pathsOf(without()), ["winfleet:fleet.content.keyVault"]);
    const rke2 = (f: Record<string, Record<string, unknown>>): void =>
      void (f.cluster = {
        name: "r",
        join: { method: "rke2", server: "https://10.0.0.4:9345", tokenSecret: "rke2Token" },
      });
    assert.deepEqual(pathsOf(without(rke2)), [], "RKE2 with no content secrets: the token alone fits");
    assert.deepEqual(
      pathsOf(
        without((f) => {
          rke2(f);
          (f.content as Record<string, unknown>).secrets = { CALICO_KUBECONFIG: "calico" };
        }),
      ),
      ["winfleet:fleet.content.keyVault"],
    );
  });

  it("must be a Key Vault resource id", () => {
    assert.deepEqual(pathsOf(without((f) => void ((f.content as Record<string, unknown>).keyVault = "kv-winfleet"))), [
      "winfleet:fleet.content.keyVault",
    ]);
  });
});

describe("the local pool kind", () => {
  it("needs no cluster and no agent when every pool is local", () => {
    const f = parseFleetConfig({
      content: { template: "sandbox", templateVersion: "1.0.0" },
      pools: [{ name: "local", kind: "local" }],
    });
    const pool = f.pools[0];
    assert.deepEqual(pool?.kind === "local" && { hosts: pool.hosts, maxUnavailable: pool.maxUnavailable }, {
      hosts: 3,
      maxUnavailable: 1,
    });
  });

  it("requires cluster and agent, naming them, as soon as a pool deploys real nodes", () => {
    const rest: Record<string, unknown> = { ...valid };
    delete rest.cluster;
    delete rest.agent;
    assert.deepEqual(pathsOf({ ...rest, pools: [...valid.pools, { name: "local", kind: "local" }] }).sort(), [
      "winfleet:fleet.agent",
      "winfleet:fleet.cluster",
    ]);
  });
});

/** The issues a value is refused with, as "<path>: <message>". */
function issuesOf(value: unknown): string[] {
  try {
    parseFleetConfig(value);
    return [];
  } catch (e) {
    if (e instanceof ValidationError) return e.issues.map((i) => `${i.path}: ${i.message}`);
    throw e;
  }
}

describe("values pulumi config set --path stores as numbers or booleans", () => {
  it("are taken as the text that was typed: variables, versions, the token id, labels", () => {
    const typed = structuredClone(valid) as typeof valid & {
      content: Record<string, unknown>;
      pools: Record<string, unknown>[];
      cluster: { join: Record<string, unknown> };
    };
    typed.content.variables = { CALICO_VXLAN_VNI: 4096, KUBE_ENABLE_X: true };
    typed.content.templateVersion = 2 as unknown as string;
    (typed.cluster.join as Record<string, unknown>).tokenId = 123456;
    (typed.agent as Record<string, unknown>).version = 1;
    (typed.pools[0] as Record<string, unknown>).labels = { rack: 7 };
    (typed.pools[0] as Record<string, unknown>).variables = { KUBE_MAX_PODS: 110 };
    const f = parseFleetConfig(typed);
    assert.deepEqual(f.content.variables, { CALICO_VXLAN_VNI: "4096", KUBE_ENABLE_X: "true" });
    assert.equal(f.content.templateVersion, "2");
    assert.equal(f.cluster?.join.method === "kubeadm" && f.cluster.join.tokenId, "123456");
    assert.equal(f.agent?.version, "1");
    const pool = f.pools[0];
    assert.deepEqual(pool?.kind === "azure" && [pool.labels, pool.variables], [
      { rack: "7" },
      { KUBE_MAX_PODS: "110" },
    ]);
  });

  it("still refuses what is no text, and a number that is no valid value, at its key path", () => {
    const bad = structuredClone(valid) as typeof valid & {
      content: Record<string, unknown>;
      cluster: { join: Record<string, unknown> };
    };
    bad.content.variables = { CALICO_VXLAN_VNI: { value: 4096 } };
    (bad.cluster.join as Record<string, unknown>).tokenId = 12345; // what --path makes of 012345
    const issues = issuesOf(bad).sort();
    assert.equal(issues.length, 2, issues.join("\n"));
    assert.match(issues[0] ?? "", /^winfleet:fleet\.cluster\.join\.tokenId: 6 lower-case letters or digits$/);
    assert.match(issues[1] ?? "", /^winfleet:fleet\.content\.variables\.CALICO_VXLAN_VNI: .*string/i);
  });
});

describe("the agent bundle's URL", () => {
  const onAccount = "https://winfleetsa.blob.core.windows.net/releases/agent.tgz";
  const withBundle = (url: string, publish: Record<string, unknown>, pools: unknown[] = valid.pools): unknown => ({
    ...valid,
    content: { ...valid.content, publish: { ...valid.content.publish, ...publish } },
    agent: { ...valid.agent, bundle: { ...valid.agent.bundle, url } },
    pools,
  });

  it("may be on the content account when nodes read it with their managed identity", () => {
    assert.deepEqual(issuesOf(withBundle(onAccount, { auth: "managedIdentity" })), []);
  });

  it("is refused on the content account when nodes read content with a SAS, or a BYO host would fetch it, naming the key", () => {
    const sas = issuesOf(withBundle(onAccount, { auth: "sas", sasExpiry: "2027-01-01T00:00:00Z" }));
    assert.equal(sas.length, 1);
    assert.match(
      sas[0] ?? "",
      /^winfleet:fleet\.agent\.bundle\.url: is on the content storage account winfleetsa, and nodes read that account with a SAS scoped to the content blob alone: publish the bundle where nodes can download it without credentials/,
    );
    const byo = issuesOf(
      withBundle(onAccount, { auth: "managedIdentity" }, [
        {
          name: "lab",
          kind: "byo",
          hosts: [{ name: "h1", address: "10.0.0.5", user: "admin", passwordSecret: "p", hostKey: HOST_KEY }],
        },
      ]),
    );
    assert.deepEqual(byo, [
      "winfleet:fleet.agent.bundle.url: is on the content storage account winfleetsa, and pools[0] (byo) has no managed identity to read it with: publish the bundle where nodes can download it without credentials (a release page, or a container with anonymous read access on another account)",
    ]);
  });

  it("is free anywhere else", () => {
    assert.deepEqual(
      issuesOf(
        withBundle("https://github.com/o/winfleet/releases/download/v1/agent.tgz", {
          auth: "sas",
          sasExpiry: "2027-01-01T00:00:00Z",
        }),
      ),
      [],
    );
    assert.deepEqual(
      issuesOf(
        withBundle("https://other.blob.core.windows.net/releases/agent.tgz", {
          auth: "sas",
          sasExpiry: "2027-01-01T00:00:00Z",
        }),
      ),
      [],
    );
  });
});

describe("the Azure subscription and the kube context a stack deploys to", () => {
  const sub = (id: string, rest: string): string => `/subscriptions/${id}/${rest}`;
  const A = "11111111-1111-1111-1111-111111111111";
  const B = "22222222-2222-2222-2222-222222222222";
  const stack = (subnet: string, vault: string, publish: Record<string, unknown> = {}): unknown => ({
    ...structuredClone(valid),
    content: {
      ...structuredClone(valid.content),
      keyVault: vault,
      publish: { ...valid.content.publish, ...publish },
    },
    pools: [{ ...valid.pools[0], subnetId: subnet }],
  });
  const subnet = (id: string): string =>
    sub(id, "resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes");
  const vault = (id: string): string => sub(id, "resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv-winfleet");

  it("is the one subscription the stack's resource ids name", () => {
    assert.equal(azureSubscription(parseFleetConfig(stack(subnet(A), vault(A)))), A.toLowerCase());
  });

  it("refuses resources in two subscriptions, naming the one that differs", () => {
    assert.deepEqual(pathsOf(stack(subnet(A), vault(B))), ["winfleet:fleet.content.keyVault"]);
    assert.deepEqual(pathsOf(stack(subnet(A), vault(A), { subscriptionId: B })), [
      "winfleet:fleet.content.publish.subscriptionId",
    ]);
  });

  it("asks for the storage account's subscription when nothing else names one", () => {
    const byo = {
      ...structuredClone(valid),
      content: { ...structuredClone(valid.content), keyVault: undefined },
      pools: [
        {
          name: "lab",
          kind: "byo",
          hosts: [{ name: "h1", address: "10.0.0.5", user: "a", passwordSecret: "p", trustOnFirstUse: true }],
        },
      ],
      agent: { ...valid.agent, bundle: { url: "https://example.test/agent.tgz", sha256: "b".repeat(64) } },
    };
    assert.ok(pathsOf(byo).includes("winfleet:fleet.content.publish.subscriptionId"));
    (byo.content.publish as Record<string, unknown>).subscriptionId = A;
    (byo.content.publish as Record<string, unknown>).auth = "sas";
    (byo.content.publish as Record<string, unknown>).sasExpiry = "2027-01-01T00:00:00Z";
    assert.equal(azureSubscription(parseFleetConfig(byo)), A);
  });

  it("takes a kube context by name", () => {
    const f = structuredClone(valid) as typeof valid & { cluster: Record<string, unknown> };
    f.cluster.kubeContext = "dev-admin";
    assert.equal(parseFleetConfig(f).cluster?.kubeContext, "dev-admin");
    f.cluster.kubeContext = "";
    assert.deepEqual(pathsOf(f), ["winfleet:fleet.cluster.kubeContext"]);
  });
});

describe("a BYO host's key", () => {
  const withHost = (host: Record<string, unknown>) => ({
    ...valid,
    pools: [
      {
        name: "lab",
        kind: "byo",
        hosts: [{ name: "h1", address: "10.0.0.5", user: "admin", passwordSecret: "p", ...host }],
      },
    ],
  });
  const issues = (value: unknown): string[] => {
    try {
      parseFleetConfig(value);
      return [];
    } catch (e) {
      if (e instanceof ValidationError) return e.issues.map((i) => `${i.path}: ${i.message}`);
      throw e;
    }
  };

  it("is required, naming the key path, the command that prints it and the way to trust it on first use", () => {
    const [issue, ...more] = issues(withHost({}));
    assert.deepEqual(more, []);
    assert.match(issue ?? "", /^winfleet:fleet\.pools\[0\]\.hosts\[0\]\.hostKey: is required: /);
    assert.match(issue ?? "", /ssh-keyscan -t ed25519 -p 22 10\.0\.0\.5/);
    assert.match(issue ?? "", /trustOnFirstUse: true/);
  });

  it("is taken as ssh-keyscan prints it, with a comment or without", () => {
    assert.deepEqual(issues(withHost({ hostKey: HOST_KEY })), []);
    assert.deepEqual(issues(withHost({ hostKey: `${HOST_KEY} root@winlab-01` })), []);
  });

  it("refuses what is no public key: another type, not base64, a blob of another type, cut short", () => {
    const blob = HOST_KEY.split(" ")[1] ?? "";
    for (const [key, why] of [
      [`ssh-dss ${blob}`, /must start with the key type/],
      ["ssh-ed25519 not*base64", /not base64/],
      [`ecdsa-sha2-nistp256 ${blob}`, /does not hold a ecdsa-sha2-nistp256 key/],
      ["ssh-ed25519 AAAAC3Nz", /does not hold a ssh-ed25519 key/],
    ] as const) {
      const [issue] = issues(withHost({ hostKey: key }));
      assert.match(issue ?? "", /^winfleet:fleet\.pools\[0\]\.hosts\[0\]\.hostKey: /, key);
      assert.match(issue ?? "", why, key);
    }
  });

  it("may be left to the first up only when the entry says so, and not both", () => {
    assert.deepEqual(issues(withHost({ trustOnFirstUse: true })), []);
    assert.deepEqual(issues(withHost({ hostKey: HOST_KEY, trustOnFirstUse: true })), [
      "winfleet:fleet.pools[0].hosts[0].trustOnFirstUse: must not be set with hostKey: the key given is the one trusted",
    ]);
  });
});
