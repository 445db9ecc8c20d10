/**
 * The secret variables a node is given (the join token under the variable its
 * join component reads, and the stack's `content.secrets`), carried as one
 * JSON object: the bootstrap's `-Secrets` argument on Azure, one line on its
 * standard input over SSH. Only ever a Pulumi secret.
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
