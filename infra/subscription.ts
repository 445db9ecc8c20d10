/**
 * The one Azure subscription a stack deploys to, as its resource ids name it,
 * and the schema's check that they name only one (see config.ts).
 */
import type { z } from "zod";
import type { FleetConfig } from "./config";

/** The parts of a fleet config the subscription is read from (the schema's shape, before its refinements). */
type Fleet = Pick<FleetConfig, "pools" | "content">;

/**
 * Where a stack names its Azure subscription, each with the key path that names it: the Azure
 * pools' subnets, the Key Vault and `content.publish.subscriptionId`.
 */
function subscriptionSources(f: Fleet): { readonly id: string; readonly path: (string | number)[] }[] {
  const out: { id: string; path: (string | number)[] }[] = [];
  f.pools.forEach((p, i) => {
    if (p.kind === "azure") out.push({ id: subscriptionIn(p.subnetId), path: ["pools", i, "subnetId"] });
  });
  if (f.content.keyVault) out.push({ id: subscriptionIn(f.content.keyVault), path: ["content", "keyVault"] });
  const publish = f.content.publish;
  if (publish.to === "blob" && publish.subscriptionId)
    out.push({ id: publish.subscriptionId, path: ["content", "publish", "subscriptionId"] });
  // An id that does not parse is refused at its own path already.
  return out.filter((s) => s.id !== "");
}

const subscriptionIn = (resourceId: string): string =>
  (/^\/subscriptions\/([^/]+)\//i.exec(resourceId)?.[1] ?? "").toLowerCase();

/**
 * The one Azure subscription a stack deploys to (its explicit provider's), when it deploys
 * anything there: Pulumi never falls back to the subscription `az login` or ARM_SUBSCRIPTION_ID
 * happens to select, so the identity, its role assignments and the machines land where their
 * ids, computed from the stack, say they are.
 */
export function azureSubscription(f: FleetConfig): string | undefined {
  return subscriptionSources(f)[0]?.id;
}

// One subscription per stack, named by the stack whenever it deploys to Azure.
export function oneSubscription(f: Fleet, ctx: z.RefinementCtx): void {
  const sources = subscriptionSources(f);
  const first = sources[0];
  for (const s of sources.slice(1))
    if (first && s.id.toLowerCase() !== first.id.toLowerCase())
      ctx.addIssue({
        code: "custom",
        path: s.path,
        message: `is in subscription ${s.id}, but ${first.path.join(".")} is in ${first.id}: a stack deploys to one Azure subscription`,
      });
  if (!first && f.content.publish.to === "blob" && !f.content.keyVault && !f.pools.some((p) => p.kind === "azure"))
    ctx.addIssue({
      code: "custom",
      path: ["content", "publish", "subscriptionId"],
      message: "is required: no Azure pool or Key Vault names the subscription the storage account is in",
    });
}
