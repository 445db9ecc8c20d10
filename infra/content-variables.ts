/**
 * The check `pulumi up` and `winfleet render` make before declaring anything:
 * every variable the template's components require has a value on every pool
 * — from the template, the stack's `content.variables`/`content.secrets`, the
 * pool's `variables`, or what winfleet sets itself (join and pool variables).
 * Otherwise nodes would be created only to fail their first apply.
 */
import type { Catalog } from "../agent/content";
import { missingVariables, pickTemplate, resolveTarget } from "../agent/lifecycle";
import type { FleetConfig } from "./config";

/** Variables the agent sets on every command itself. */
const AGENT_FACTS = [
  "WINFLEET_ROOT",
  "WINFLEET_NODE_NAME",
  "WINFLEET_COMPONENT",
  "WINFLEET_COMPONENT_VERSION",
  "WINFLEET_PHASE",
  "WINFLEET_SECTION",
];

/** What winfleet sets on a pool's nodes, by variable name (values do not matter here, only presence). */
export interface SetByWinfleet {
  /** Join variables (KUBE_API_SERVER…, RKE2_SERVER) and the token's variable. */
  readonly join: readonly string[];
  /** Per pool name: KUBE_NODE_LABELS, KUBE_REGISTER_TAINT when the pool sets them. */
  readonly pool: Readonly<Record<string, readonly string[]>>;
}

/**
 * Messages for every required variable without a value, each naming the pool
 * and where to set it; empty when the stack is complete.
 */
export function missingContentVariables(fleet: FleetConfig, catalog: Catalog, set: SetByWinfleet): string[] {
  const template = pickTemplate(catalog, { name: fleet.content.template, version: fleet.content.templateVersion });
  const components = resolveTarget(catalog, template).components.map((c) => c.metadata);
  const out: string[] = [];
  fleet.pools.forEach((pool, i) => {
    if (pool.kind === "local") return;
    const present = (names: readonly string[]): Record<string, string> =>
      Object.fromEntries(names.map((n) => [n, "set"]));
    const variables = {
      ...template.variables,
      ...fleet.content.variables,
      ...pool.variables,
      ...present(AGENT_FACTS),
      ...present(set.join),
      ...present(set.pool[pool.name] ?? []),
    };
    const secrets = present(Object.keys(fleet.content.secrets));
    for (const m of missingVariables(components, { variables, secrets })) {
      out.push(
        `pools[${i}] (${pool.name}): ${m}; set it in winfleet:fleet.content.variables (content.secrets for a secret) or winfleet:fleet.pools[${i}].variables`,
      );
    }
  });
  return out;
}
