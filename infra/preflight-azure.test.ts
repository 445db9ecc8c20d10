/**
 * The Azure checks against Azure's answers as its REST references give them: "Permissions - List
 * For Resource" (the caller's actions and data actions at a scope, here those of the built-in
 * roles Contributor, Owner and Key Vault Secrets Officer), the vault's and the storage account's
 * properties, and Key Vault's "Get Deleted Secret".
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { poolVaultSecret } from "../components/azure-names";
import { parseFleetConfig } from "./config";
import type { Check } from "./preflight";
import { type AzureAnswer, type AzureApi, azureChecks, permits } from "./preflight-azure";

const SUB = "11111111-1111-1111-1111-111111111111";
const RG = `/subscriptions/${SUB}/resourceGroups/rg`;
const VAULT = `${RG}/providers/Microsoft.KeyVault/vaults/kv-fleet`;
const ACCOUNT = `${RG}/providers/Microsoft.Storage/storageAccounts/fleetcontent`;
const SUBNET = `${RG}/providers/Microsoft.Network/virtualNetworks/v/subnets/nodes`;

// The built-in roles' permissions, as Permissions - List For Resource returns them.
const CONTRIBUTOR = {
  actions: ["*"],
  notActions: [
    "Microsoft.Authorization/*/Delete",
    "Microsoft.Authorization/*/Write",
    "Microsoft.Authorization/elevateAccess/Action",
  ],
  dataActions: [],
  notDataActions: [],
};
const RBAC_ADMIN = {
  actions: ["Microsoft.Authorization/roleAssignments/write"],
  notActions: [],
  dataActions: [],
  notDataActions: [],
};
const SECRETS_OFFICER = {
  actions: [],
  notActions: [],
  dataActions: ["Microsoft.KeyVault/vaults/secrets/*"],
  notDataActions: [],
};

const fleet = parseFleetConfig({
  cluster: {
    name: "prod",
    join: {
      method: "kubeadm",
      apiServer: "https://10.0.0.4:6443",
      caCertHash: `sha256:${"a".repeat(64)}`,
      tokenId: "prod01",
      tokenSecret: "joinToken",
    },
  },
  content: {
    template: "win2022",
    templateVersion: "1.0.0",
    publish: { to: "blob", resourceGroup: "rg", storageAccount: "fleetcontent" },
    keyVault: VAULT,
  },
  agent: { version: "0.1.0", bundle: { url: "https://example.test/a.tgz", sha256: "b".repeat(64) } },
  pools: [
    {
      name: "win",
      kind: "azure",
      location: "westeurope",
      resourceGroup: "rg",
      subnetId: SUBNET,
      count: 2,
      adminPasswordSecret: "adminPassword",
    },
  ],
});

/** Azure as a map from request path (query left off) to answer; anything else is a 404. */
function azure(answers: Record<string, unknown>, vault: Record<string, AzureAnswer> = {}): AzureApi {
  const answer = (path: string): AzureAnswer => {
    const body = answers[path.split("?")[0] ?? ""];
    return body === undefined ? { status: 404, body: { error: { code: "NotFound" } } } : { status: 200, body };
  };
  return {
    arm: (path) => Promise.resolve(answer(path)),
    vault: (_name, path) => Promise.resolve(vault[path.split("?")[0] ?? ""] ?? { status: 404, body: undefined }),
  };
}
const permissions = (...roles: object[]) => ({ value: roles });
const PERMISSIONS = "/providers/Microsoft.Authorization/permissions";

/** A ready subscription: every resource there, the deploying identity with `roles` everywhere. */
function ready(roles: object[], change: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    [`/subscriptions/${SUB}`]: { subscriptionId: SUB },
    [RG]: { name: "rg" },
    [`${RG}${PERMISSIONS}`]: permissions(...roles),
    [SUBNET]: { properties: { natGateway: { id: "nat" } } },
    [`${SUBNET}${PERMISSIONS}`]: permissions(...roles),
    [ACCOUNT]: { properties: { allowSharedKeyAccess: true, networkRuleSet: { defaultAction: "Allow" } } },
    [`${ACCOUNT}${PERMISSIONS}`]: permissions(...roles),
    [VAULT]: { properties: { enableRbacAuthorization: true, networkAcls: { defaultAction: "Allow" } } },
    [`${VAULT}${PERMISSIONS}`]: permissions(...roles),
    ...change,
  };
}
const findings = (checks: Check[]): string[] =>
  checks.flatMap((c) => c.findings.map((f) => `${c.name} ${f.level}: ${f.message}`));

describe("Azure permissions", () => {
  it("match wildcards and subtract what a role excludes", () => {
    assert.ok(permits([CONTRIBUTOR], "Microsoft.Compute/virtualMachineScaleSets/write"));
    assert.ok(!permits([CONTRIBUTOR], "Microsoft.Authorization/roleAssignments/write"), "Contributor grants no roles");
    assert.ok(permits([CONTRIBUTOR, RBAC_ADMIN], "microsoft.authorization/roleassignments/write"), "case-insensitive");
    assert.ok(!permits([CONTRIBUTOR], "Microsoft.KeyVault/vaults/secrets/delete", true), "no data action");
    assert.ok(permits([SECRETS_OFFICER], "Microsoft.KeyVault/vaults/secrets/delete", true));
  });
});

describe("the Azure preflight", () => {
  it("passes an identity with Contributor, a role-assignment role and Key Vault Secrets Officer", async () => {
    assert.deepEqual(
      findings(await azureChecks(azure(ready([CONTRIBUTOR, RBAC_ADMIN, SECRETS_OFFICER])), fleet, "prod")),
      [],
    );
  });

  it("finds what Key Vault Contributor alone leaves out: the role assignments, and deleting the secret on destroy", async () => {
    const found = findings(await azureChecks(azure(ready([CONTRIBUTOR])), fleet, "prod"));
    assert.ok(
      found.includes(
        "azure-key-vault problem: on Key Vault kv-fleet this identity may not Microsoft.KeyVault/vaults/secrets/delete (a data action): destroy and a removed pool delete the secret through Key Vault's data plane, which Azure Resource Manager cannot",
      ),
      found.join("\n"),
    );
    assert.ok(
      found.some((f) => /^azure-storage problem: .* may not Microsoft\.Authorization\/roleAssignments\/write/.test(f)),
    );
  });

  it("finds a soft-deleted secret of the pool's name, with the commands that recover or purge it", async () => {
    const secret = poolVaultSecret(VAULT, "prod", "win").name;
    const checks = await azureChecks(
      azure(ready([CONTRIBUTOR, RBAC_ADMIN, SECRETS_OFFICER]), {
        [`/deletedsecrets/${secret}`]: {
          status: 200,
          body: {
            recoveryId: `https://kv-fleet.vault.azure.net/deletedsecrets/${secret}`,
            scheduledPurgeDate: 1501714433,
          },
        },
      }),
      fleet,
      "prod",
    );
    const vault = checks.find((c) => c.name === "azure-key-vault")?.findings ?? [];
    assert.equal(vault.length, 1);
    assert.match(
      vault[0]?.message ?? "",
      new RegExp(`a deleted secret ${secret} \\(pool win\\) waits in kv-fleet's soft delete`),
    );
    assert.equal(
      vault[0]?.fix,
      `az keyvault secret recover --vault-name kv-fleet --name ${secret} (keeps its versions; the next up writes a new one), or az keyvault secret purge --vault-name kv-fleet --name ${secret}`,
    );
  });

  it("finds what keeps the upload and the secret's delete from where Pulumi runs: no shared keys, firewalls, access policies", async () => {
    const found = findings(
      await azureChecks(
        azure(
          ready([CONTRIBUTOR, RBAC_ADMIN, SECRETS_OFFICER], {
            [ACCOUNT]: { properties: { allowSharedKeyAccess: false, networkRuleSet: { defaultAction: "Deny" } } },
            [VAULT]: { properties: { enableRbacAuthorization: false, publicNetworkAccess: "Disabled" } },
            [SUBNET]: { properties: { defaultOutboundAccess: false } },
          }),
        ),
        fleet,
        "prod",
      ),
    );
    assert.deepEqual(
      found.map((f) => f.replace(/:.*/, "")),
      [
        "azure-pools warning",
        "azure-storage problem",
        "azure-storage warning",
        "azure-key-vault problem",
        "azure-key-vault warning",
      ],
      found.join("\n"),
    );
    assert.match(found[1] ?? "", /refuses shared-key access/);
  });

  it("stops at a subscription the identity cannot see, and names what does not exist", async () => {
    const none = await azureChecks(azure({}), fleet, "prod");
    assert.deepEqual(findings(none), [
      `azure-subscription problem: the signed-in identity cannot read subscription ${SUB} (404)`,
    ]);
    const bare = findings(await azureChecks(azure({ [`/subscriptions/${SUB}`]: {} }), fleet, "prod"));
    assert.deepEqual(bare, [
      "azure-pools problem: pool win: resource group rg does not exist",
      "azure-storage problem: storage account fleetcontent does not exist in rg",
      "azure-key-vault problem: Key Vault kv-fleet does not exist",
    ]);
  });
});
