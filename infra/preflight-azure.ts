/**
 * The preflight checks that need Azure, asked as the identity `az login` (or
 * ARM_*) signed in, which is the one Pulumi deploys as: that the stack's
 * subscription, resource groups, subnet, storage account and Key Vault exist;
 * what that identity may do on each (Azure Resource Manager's "Permissions -
 * List For Resource": the caller's actions and data actions at a scope); what
 * keeps the machine running Pulumi from their data planes (shared keys off, a
 * firewall); and a soft-deleted secret that would block the pool's. See
 * preflight.ts.
 */
import { poolVaultSecret, storageAccountId, vaultOf } from "../components";
import { type FleetConfig, azureSubscription } from "./config";
import { type Check, type Finding, problem, warning } from "./preflight";

/** An answer from Azure: its status and its JSON body. */
export interface AzureAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** GETs on Azure Resource Manager (a path from the root) and on a vault's data plane. */
export interface AzureApi {
  arm(path: string): Promise<AzureAnswer>;
  vault(vaultName: string, path: string): Promise<AzureAnswer>;
}

/** A permission entry as ARM lists it. */
interface Permission {
  readonly actions?: readonly string[];
  readonly notActions?: readonly string[];
  readonly dataActions?: readonly string[];
  readonly notDataActions?: readonly string[];
}

const matches = (pattern: string, action: string): boolean =>
  new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\/]/g, "\\$&").replace(/\*/g, ".*")}$`, "i").test(action);

/** Whether the permissions ARM listed at a scope allow `action` (a data action with `data`). */
export function permits(permissions: readonly Permission[], action: string, data = false): boolean {
  return permissions.some((p) => {
    const [yes, no] = data ? [p.dataActions, p.notDataActions] : [p.actions, p.notActions];
    return (yes ?? []).some((x) => matches(x, action)) && !(no ?? []).some((x) => matches(x, action));
  });
}

/** The caller's permissions at `scope`, or the reason they could not be read. */
async function permissionsAt(api: AzureApi, scope: string): Promise<readonly Permission[] | string> {
  const a = await api.arm(`${scope}/providers/Microsoft.Authorization/permissions?api-version=2022-04-01`);
  if (a.status !== 200) return `listing the permissions at ${scope} answered ${a.status}`;
  return (a.body as { value?: Permission[] }).value ?? [];
}

/** Findings for the actions (and data actions) the deploying identity lacks at `scope`. */
async function missing(
  api: AzureApi,
  scope: string,
  what: string,
  needed: readonly { readonly action: string; readonly data?: boolean; readonly why: string }[],
  fix: string,
): Promise<Finding[]> {
  const perms = await permissionsAt(api, scope);
  if (typeof perms === "string")
    return [warning(`${what}: ${perms}, so what this identity may do there is unknown`, fix)];
  return needed
    .filter((n) => !permits(perms, n.action, n.data))
    .map((n) =>
      problem(`on ${what} this identity may not ${n.action}${n.data ? " (a data action)" : ""}: ${n.why}`, fix),
    );
}

const properties = (a: AzureAnswer): Record<string, unknown> =>
  (a.body as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
const ROLE_WRITE = "Microsoft.Authorization/roleAssignments/write";

/** The checks that need Azure, for the stack `stack` declared by `fleet`. */
export async function azureChecks(api: AzureApi, fleet: FleetConfig, stack: string): Promise<Check[]> {
  const subscription = azureSubscription(fleet);
  if (!subscription) return [];
  const sub = await api.arm(`/subscriptions/${subscription}?api-version=2022-12-01`);
  const subscriptionCheck: Check = {
    name: "azure-subscription",
    needs: "azure",
    about: `subscription ${subscription}`,
    findings:
      sub.status === 200
        ? []
        : [
            problem(
              `the signed-in identity cannot read subscription ${subscription} (${sub.status})`,
              "sign in (az login, or ARM_* for the deploying identity) as an identity with access to it",
            ),
          ],
  };
  if (sub.status !== 200) return [subscriptionCheck];
  return [
    subscriptionCheck,
    await pools(api, fleet),
    await storage(api, fleet, subscription),
    await keyVault(api, fleet, stack),
  ];
}

async function pools(api: AzureApi, fleet: FleetConfig): Promise<Check> {
  const findings: Finding[] = [];
  const identityNeeded = fleet.content.keyVault !== undefined || fleet.content.publish.to === "blob";
  for (const pool of fleet.pools) {
    if (pool.kind !== "azure") continue;
    const sub = /^\/subscriptions\/([^/]+)\//i.exec(pool.subnetId)?.[1] ?? "";
    const rg = `/subscriptions/${sub}/resourceGroups/${pool.resourceGroup}`;
    const group = await api.arm(`${rg}?api-version=2021-04-01`);
    if (group.status === 404) {
      findings.push(
        problem(
          `pool ${pool.name}: resource group ${pool.resourceGroup} does not exist`,
          `az group create --name ${pool.resourceGroup} --location ${pool.location}`,
        ),
      );
      continue;
    }
    const machines =
      pool.mode === "vmss"
        ? [{ action: "Microsoft.Compute/virtualMachineScaleSets/write", why: "the scale set" }]
        : [
            { action: "Microsoft.Compute/virtualMachines/write", why: "the VMs" },
            {
              action: "Microsoft.Compute/virtualMachines/extensions/write",
              why: "their bootstrap and password extensions",
            },
            { action: "Microsoft.Network/networkInterfaces/write", why: "their NICs" },
          ];
    const identity = identityNeeded
      ? [
          { action: "Microsoft.ManagedIdentity/userAssignedIdentities/write", why: "the pool's identity" },
          {
            action: "Microsoft.ManagedIdentity/userAssignedIdentities/assign/action",
            why: "attaching it to the machines",
          },
        ]
      : [];
    findings.push(
      ...(await missing(
        api,
        rg,
        `resource group ${pool.resourceGroup}`,
        [...machines, ...identity],
        `grant the deploying identity Contributor on resource group ${pool.resourceGroup}`,
      )),
    );
    const subnet = await api.arm(`${pool.subnetId}?api-version=2024-05-01`);
    if (subnet.status === 404) {
      findings.push(
        problem(
          `pool ${pool.name}: subnet ${pool.subnetId} does not exist`,
          "create it, or set pools[].subnetId to the cluster's subnet",
        ),
      );
      continue;
    }
    const p = properties(subnet);
    if (p.defaultOutboundAccess === false && p.natGateway === undefined)
      findings.push(
        warning(
          `pool ${pool.name}: the subnet has no default outbound access and no NAT gateway, so nodes cannot download what they bootstrap`,
          "give the subnet a NAT gateway, or let the downloads through your egress firewall",
        ),
      );
    findings.push(
      ...(await missing(
        api,
        pool.subnetId,
        `subnet ${pool.subnetId.split("/").pop() ?? ""}`,
        [{ action: "Microsoft.Network/virtualNetworks/subnets/join/action", why: "machines join the subnet" }],
        "grant the deploying identity Network Contributor on the subnet (or its virtual network)",
      )),
    );
  }
  return {
    name: "azure-pools",
    needs: "azure",
    about: "the pools' resource groups and subnets, and the rights to deploy there",
    findings,
  };
}

async function storage(api: AzureApi, fleet: FleetConfig, subscription: string): Promise<Check> {
  const publish = fleet.content.publish;
  const about = "the content storage account, and the rights and network reach the upload needs";
  if (publish.to !== "blob")
    return { name: "azure-storage", needs: "azure", about: `${about}: content is in a ConfigMap`, findings: [] };
  const id = storageAccountId(subscription, publish.resourceGroup, publish.storageAccount);
  const account = await api.arm(`${id}?api-version=2023-05-01`);
  if (account.status === 404)
    return {
      name: "azure-storage",
      needs: "azure",
      about,
      findings: [
        problem(
          `storage account ${publish.storageAccount} does not exist in ${publish.resourceGroup}`,
          `az storage account create --name ${publish.storageAccount} --resource-group ${publish.resourceGroup}`,
        ),
      ],
    };
  const findings: Finding[] = [];
  const p = properties(account);
  if (p.allowSharedKeyAccess === false)
    findings.push(
      problem(
        `storage account ${publish.storageAccount} refuses shared-key access: Pulumi's azure-native Blob uploads, reads and deletes the content blob with the account key, and a SAS is made from it`,
        `az storage account update --name ${publish.storageAccount} --resource-group ${publish.resourceGroup} --allow-shared-key-access true (or an Azure Policy exemption for it)`,
      ),
    );
  const rules = p.networkRuleSet as { defaultAction?: string } | undefined;
  if (p.publicNetworkAccess === "Disabled" || rules?.defaultAction === "Deny")
    findings.push(
      warning(
        `storage account ${publish.storageAccount} takes requests only from allowed networks: the content upload (and a refresh of it) goes to its blob endpoint from where Pulumi runs`,
        "allow the network of the machine or runner that runs Pulumi (networkRuleSet.ipRules, or a private endpoint it reaches)",
      ),
    );
  const needed = [
    { action: "Microsoft.Storage/storageAccounts/blobServices/containers/write", why: "the content container" },
    {
      action: "Microsoft.Storage/storageAccounts/listKeys/action",
      why: "the content blob's upload, refresh and delete use the account key",
    },
    ...(publish.auth === "managedIdentity"
      ? [{ action: ROLE_WRITE, why: "the pools' identities get Storage Blob Data Reader here" }]
      : []),
    ...(publish.auth === "sas"
      ? [{ action: "Microsoft.Storage/storageAccounts/ListServiceSas/action", why: "the content SAS" }]
      : []),
  ];
  findings.push(
    ...(await missing(
      api,
      id,
      `storage account ${publish.storageAccount}`,
      needed,
      `grant the deploying identity Contributor${publish.auth === "managedIdentity" ? " and Role Based Access Control Administrator" : ""} on storage account ${publish.storageAccount}`,
    )),
  );
  return { name: "azure-storage", needs: "azure", about, findings };
}

async function keyVault(api: AzureApi, fleet: FleetConfig, stack: string): Promise<Check> {
  const id = fleet.content.keyVault;
  const about =
    "the Key Vault: rights to write, assign and delete the pools' secrets, its network, soft-deleted secrets";
  if (!id) return { name: "azure-key-vault", needs: "azure", about: `${about}: the stack names none`, findings: [] };
  const { name: vaultName } = vaultOf(id);
  const vault = await api.arm(`${id}?api-version=2023-07-01`);
  if (vault.status === 404)
    return {
      name: "azure-key-vault",
      needs: "azure",
      about,
      findings: [
        problem(
          `Key Vault ${vaultName} does not exist`,
          "create it with --enable-rbac-authorization, or set content.keyVault",
        ),
      ],
    };
  const findings: Finding[] = [];
  const p = properties(vault);
  if (p.enableRbacAuthorization !== true)
    findings.push(
      problem(
        `Key Vault ${vaultName} uses access policies, not Azure RBAC: the pools' secret-scoped role assignments do nothing there`,
        `az keyvault update --name ${vaultName} --enable-rbac-authorization true`,
      ),
    );
  const acls = p.networkAcls as { defaultAction?: string } | undefined;
  if (p.publicNetworkAccess === "Disabled" || acls?.defaultAction === "Deny")
    findings.push(
      warning(
        `Key Vault ${vaultName} takes requests only from allowed networks: deleting a pool's secret (destroy, a removed pool) goes to its data plane from where Pulumi runs, and nodes read it from theirs`,
        "allow the network of the machine or runner that runs Pulumi and the nodes' subnet (a private endpoint or a network rule)",
      ),
    );
  findings.push(
    ...(await missing(
      api,
      id,
      `Key Vault ${vaultName}`,
      [
        {
          action: "Microsoft.KeyVault/vaults/secrets/write",
          why: "writing the pools' secrets through Azure Resource Manager",
        },
        { action: ROLE_WRITE, why: "each pool's identity gets Key Vault Secrets User on its own secret" },
        {
          action: "Microsoft.KeyVault/vaults/secrets/delete",
          data: true,
          why: "destroy and a removed pool delete the secret through Key Vault's data plane, which Azure Resource Manager cannot",
        },
      ],
      `grant the deploying identity Key Vault Contributor, Key Vault Secrets Officer and Role Based Access Control Administrator on Key Vault ${vaultName}`,
    )),
  );
  for (const pool of fleet.pools) {
    if (pool.kind !== "azure") continue;
    const secret = poolVaultSecret(id, stack, pool.name).name;
    const deleted = await api.vault(vaultName, `/deletedsecrets/${secret}?api-version=7.4`);
    if (deleted.status === 200)
      findings.push(
        problem(
          `a deleted secret ${secret} (pool ${pool.name}) waits in ${vaultName}'s soft delete: writing the pool's secret fails until it is recovered or purged`,
          `az keyvault secret recover --vault-name ${vaultName} --name ${secret} (keeps its versions; the next up writes a new one), or az keyvault secret purge --vault-name ${vaultName} --name ${secret}`,
        ),
      );
    else if (deleted.status !== 404)
      findings.push(
        warning(
          `whether ${vaultName} holds a soft-deleted ${secret} is unknown (${deleted.status}): reading deleted secrets takes Key Vault Secrets Officer`,
          "grant it, or check with az keyvault secret list-deleted",
        ),
      );
  }
  return { name: "azure-key-vault", needs: "azure", about, findings };
}

/** The checks `azureChecks` runs, for listing them when they do not run. */
export const AZURE_CHECKS = [
  { name: "azure-subscription", about: "the stack's subscription" },
  { name: "azure-pools", about: "the pools' resource groups and subnets, and the rights to deploy there" },
  { name: "azure-storage", about: "the content storage account, and the rights and network reach the upload needs" },
  {
    name: "azure-key-vault",
    about: "the Key Vault: rights to write, assign and delete the pools' secrets, its network, soft-deleted secrets",
  },
] as const;

/** An {@link AzureApi} over HTTPS with bearer tokens for Azure Resource Manager and Key Vault. */
export function azureApi(
  token: (resource: "https://management.azure.com/" | "https://vault.azure.net") => Promise<string>,
  endpoints: { readonly arm: string; readonly vault: (name: string) => string } = {
    arm: "https://management.azure.com",
    vault: (name) => `https://${name}.vault.azure.net`,
  },
): AzureApi {
  const get = async (url: string, bearer: string): Promise<AzureAnswer> => {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${bearer}` },
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.status, body };
  };
  return {
    arm: async (path) => get(`${endpoints.arm}${path}`, await token("https://management.azure.com/")),
    vault: async (name, path) => get(`${endpoints.vault(name)}${path}`, await token("https://vault.azure.net")),
  };
}
