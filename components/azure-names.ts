/**
 * The names an Azure pool's resources get, as pure functions of the stack and
 * the pool: scale set, computer names, identity, Key Vault secret. Each carries
 * a short digest of `<stack>/<pool>`, so two pools whose names share a prefix
 * (`production-a`, `production-b`) and the same pool in two stacks never share
 * a computer name, a scale set, an identity or a secret. (Two machines with one
 * computer name register as one Node: the second kubelet's certificate for
 * `system:node:<name>` takes the first machine's Node over.) Pure, so
 * `winfleet preflight` computes them without loading Pulumi.
 */
import { createHash } from "node:crypto";

/** NetBIOS computer names have at most 15 characters. */
export const COMPUTER_NAME_LIMIT = 15;
/** A scale set's computer name prefix: Azure appends six characters to it, and 15 is the limit. */
export const SCALE_SET_PREFIX_LIMIT = 9;
/** Key Vault's limit on a secret's name. */
const SECRET_NAME_LIMIT = 127;

/** Five hex digits of SHA-256 of `<stack>/<pool>`: what makes a pool's names its own. */
export function poolDigest(stack: string, pool: string): string {
  return createHash("sha256").update(`${stack}/${pool}`).digest("hex").slice(0, 5);
}

// Computer names may not be all digits, and the digest can be: a pool name that starts with a digit gets a letter.
function readable(pool: string, length: number): string {
  const start = /^[0-9]/.test(pool) ? `w${pool}` : pool;
  return start.slice(0, length).replace(/-+$/, "");
}

/** A scale set's computer name prefix: the pool's first letters and its digest, nine characters at most. */
export function scaleSetPrefix(stack: string, pool: string): string {
  const digest = poolDigest(stack, pool);
  return `${readable(pool, SCALE_SET_PREFIX_LIMIT - digest.length)}${digest}`;
}

/** The largest pool `computerNames` names: `-1000` is the longest suffix it leaves room for. */
const LONGEST_SUFFIX = "-1000".length;

/** Computer names (and VM names) of individual VMs: `<pool's first letters><digest>-<n>`, 15 characters at most. */
export function computerNames(stack: string, pool: string, count: number): string[] {
  const digest = poolDigest(stack, pool);
  const base = `${readable(pool, COMPUTER_NAME_LIMIT - LONGEST_SUFFIX - digest.length)}${digest}`;
  return Array.from({ length: count }, (_, i) => `${base}-${i + 1}`);
}

/** The scale set's resource name: the pool's name and its digest. */
export function scaleSetName(stack: string, pool: string): string {
  return `${pool}-${poolDigest(stack, pool)}`;
}

/** The subscription id in a resource id. */
export function subscriptionOf(resourceId: string): string {
  return /^\/subscriptions\/([^/]+)\//i.exec(resourceId)?.[1] ?? "";
}

/** The resource id of a storage account, from the subscription and its resource group. */
export function storageAccountId(subscription: string, resourceGroup: string, account: string): string {
  return `/subscriptions/${subscription}/resourceGroups/${resourceGroup}/providers/Microsoft.Storage/storageAccounts/${account}`;
}

/** What names a pool's Azure resources. */
export interface PoolRef {
  readonly name: string;
  readonly resourceGroup: string;
  readonly subnetId: string;
}

/** The user-assigned identity of a pool's nodes: its resource name, and its resource id the bootstrap asks IMDS for. */
export function poolIdentity(
  stack: string,
  pool: PoolRef,
): {
  readonly name: string;
  readonly id: string;
} {
  const name = `winfleet-${pool.name}-${poolDigest(stack, pool.name)}`;
  const id = `/subscriptions/${subscriptionOf(pool.subnetId)}/resourceGroups/${pool.resourceGroup}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`;
  return { name, id };
}

/** The Key Vault a resource id names. */
export function vaultOf(keyVault: string): { readonly name: string; readonly resourceGroup: string } {
  const m = /^\/subscriptions\/[^/]+\/resourceGroups\/([^/]+)\/providers\/Microsoft\.KeyVault\/vaults\/([^/]+)$/i.exec(
    keyVault,
  );
  if (!m?.[1] || !m[2]) throw new Error(`${keyVault} is not a Key Vault resource id`);
  return { name: m[2], resourceGroup: m[1] };
}

/**
 * The Key Vault secret of a pool's larger secrets: its name (the stack's and
 * the pool's, so a second stack on the same vault, or a soft-deleted secret of
 * another stack, never holds it), resource id (the role's scope) and URL
 * without a version.
 */
export function poolVaultSecret(
  keyVault: string,
  stack: string,
  pool: string,
): {
  readonly name: string;
  readonly id: string;
  readonly url: string;
  readonly vaultName: string;
  readonly resourceGroup: string;
} {
  const vault = vaultOf(keyVault);
  const digest = poolDigest(stack, pool);
  // Key Vault names allow letters, digits and '-'; the digest keeps names unique whatever the stack's other characters.
  const stackPart = stack.replace(/[^A-Za-z0-9-]+/g, "-").slice(0, SECRET_NAME_LIMIT - 64);
  const name = `winfleet-${stackPart}-${pool}-${digest}`.replace(/-{2,}/g, "-");
  return {
    name,
    id: `${keyVault}/secrets/${name}`,
    url: `https://${vault.name.toLowerCase()}.vault.azure.net/secrets/${name}`,
    vaultName: vault.name,
    resourceGroup: vault.resourceGroup,
  };
}
