/**
 * The secret variables a node is given (the join token under the variable its
 * join component reads, and the stack's `content.secrets`), carried as one
 * JSON object: one line on the bootstrap's standard input over SSH; on Azure
 * the join token in its `-Secrets` argument and the rest in a Key Vault
 * secret. Only ever a Pulumi secret.
 */
import * as pulumi from "@pulumi/pulumi";

/** Secret variables by name; values are Pulumi inputs (secrets). */
export type NodeSecrets = Readonly<Record<string, pulumi.Input<string>>>;

/** The values as one line of JSON, keys sorted, so the same values always give the same text. */
export function secretsLine(values: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(values).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}

/** {@link secretsLine} of resolved secrets, itself a secret. */
export function secretsJson(secrets: NodeSecrets): pulumi.Output<string> {
  return pulumi.secret(pulumi.all(secrets).apply((values) => secretsLine(values)));
}

/**
 * The secret variables that travel in the Azure extension's command line: the
 * join tokens, whose size is bounded (a kubeadm token is 23 characters, an
 * RKE2 token about a hundred). Every other secret (kubeconfigs, kube-proxy's
 * service-account token) can be kilobytes and waits in a Key Vault secret.
 */
export const INLINE_SECRETS: readonly string[] = ["KUBE_BOOTSTRAP_TOKEN", "RKE2_TOKEN"];

/** The secrets split into those for the command line ({@link INLINE_SECRETS}) and the rest. */
export function splitSecrets(secrets: NodeSecrets): { readonly inline: NodeSecrets; readonly bulky: NodeSecrets } {
  const inline: Record<string, pulumi.Input<string>> = {};
  const bulky: Record<string, pulumi.Input<string>> = {};
  for (const [name, value] of Object.entries(secrets)) (INLINE_SECRETS.includes(name) ? inline : bulky)[name] = value;
  return { inline, bulky };
}
