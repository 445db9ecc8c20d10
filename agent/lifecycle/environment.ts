/**
 * What a command is told, and what it must never leak. Every step's
 * environment is built here from, in increasing precedence: the defaults
 * components declare, the template's variables, the agent config's variables,
 * its secrets, and the facts of the step (`WINFLEET_*`, and `KUBECONFIG` for
 * the cluster-side hooks). Secret values are masked in anything kept or shown.
 */
import { secretMasker } from "../common";
import type { ComponentMetadata } from "../content";
import type { CommandStep } from "./model";

/** Values a run hands to commands. */
export interface RunValues {
  /** Template and agent-config variables (safe to journal). */
  readonly variables: Readonly<Record<string, string>>;
  /** Never journaled, logged or printed. */
  readonly secrets: Readonly<Record<string, string>>;
}

/** Facts about the host that every command gets. */
export interface HostFacts {
  /** Host path of `/`. */
  readonly root: string;
  readonly nodeName: string;
  /** The node's kubeconfig, for `lprecmds` and `lpstcmds`. */
  readonly kubeconfig?: string;
}

/** The environment for one command step. */
export function stepEnvironment(
  step: CommandStep,
  metadata: ComponentMetadata,
  values: RunValues,
  facts: HostFacts,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, spec] of Object.entries(metadata.variables))
    if (spec.default !== undefined) env[name] = spec.default;
  Object.assign(env, values.variables, values.secrets);
  env.WINFLEET_ROOT = facts.root;
  env.WINFLEET_NODE_NAME = facts.nodeName;
  env.WINFLEET_COMPONENT = step.component;
  env.WINFLEET_COMPONENT_VERSION = step.version;
  env.WINFLEET_PHASE = step.phase;
  env.WINFLEET_SECTION = step.section;
  if (step.from !== undefined && step.from !== step.version) env.WINFLEET_PREVIOUS_VERSION = step.from;
  if (step.role !== "commands" && facts.kubeconfig !== undefined) env.KUBECONFIG = facts.kubeconfig;
  return env;
}

/** Variables the agent's own environment must not pass on: commands get KUBECONFIG only as a hook. */
export const WITHHELD = ["KUBECONFIG"] as const;

/** Required variables that have no value, as messages naming the component and the variable. */
export function missingVariables(components: readonly ComponentMetadata[], values: RunValues): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const m of components) {
    for (const [name, spec] of Object.entries(m.variables)) {
      const key = `${m.name}_${m.version}:${name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const value = values.secrets[name] ?? values.variables[name] ?? spec.default;
      if (spec.required && (value === undefined || value === "")) {
        out.push(
          `${m.name} ${m.version} needs ${name}${spec.description ? ` (${spec.description})` : ""}${spec.secret ? ", a secret" : ""}`,
        );
      }
    }
  }
  return out;
}

/**
 * Every value that must be masked: the secrets, and variables a component declares secret, whether
 * given or left at the component's default (which commands get just the same).
 */
export function secretValues(components: readonly ComponentMetadata[], values: RunValues): string[] {
  const out = new Set(Object.values(values.secrets));
  for (const m of components) {
    for (const [name, spec] of Object.entries(m.variables)) {
      if (!spec.secret) continue;
      for (const v of [values.secrets[name], values.variables[name], spec.default]) if (v !== undefined) out.add(v);
    }
  }
  // However short: a three-character secret is still a secret, and masking it too often is the lesser harm.
  return [...out].filter((v) => v.length > 0).sort((a, b) => b.length - a.length);
}

/** The variable names any of `components` declares `secret`. */
export function declaredSecretNames(components: readonly ComponentMetadata[]): Set<string> {
  const names = new Set<string>();
  for (const m of components) for (const [name, spec] of Object.entries(m.variables)) if (spec.secret) names.add(name);
  return names;
}

/**
 * Splits variables into those that may be journaled and those a component
 * declares secret (whichever way they were given: template, agent config,
 * `--var`), which are handled as secrets and never written down.
 */
export function splitDeclaredSecrets(
  variables: Readonly<Record<string, string>>,
  names: ReadonlySet<string>,
): { variables: Record<string, string>; secrets: Record<string, string> } {
  const plain: Record<string, string> = {};
  const secret: Record<string, string> = {};
  for (const [k, v] of Object.entries(variables)) (names.has(k) ? secret : plain)[k] = v;
  return { variables: plain, secrets: secret };
}

/**
 * Replaces every secret value with `***`, as it is and in any encoding a command may print it in,
 * and key material (private keys, kubeconfig and bearer credentials) whoever named it.
 */
export function masker(secrets: readonly string[]): (text: string) => string {
  return secretMasker(secrets);
}
