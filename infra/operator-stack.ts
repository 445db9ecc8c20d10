/**
 * For teams that run GitOps in the cluster: a `Stack` for the Pulumi
 * Kubernetes Operator (pulumi.com/v1) that deploys a winfleet stack from Git,
 * re-running it on every commit to the branch and, with the same commit, on a
 * timer — the operator's drift correction. `winfleet operator-stack` prints it.
 */
import { stringify as toYaml } from "yaml";

/** What the operator needs to know. */
export interface OperatorStackArgs {
  /** The fully qualified stack, `<org>/winfleet/<stack>` (or `<org>/<stack>`). */
  readonly stack: string;
  /** The Git repository holding this project. */
  readonly projectRepo: string;
  /** @default "main" */
  readonly branch?: string;
  /** Where the operator runs it. @default "pulumi-operator" */
  readonly namespace?: string;
  /** How often to re-run the same commit to correct drift, in seconds. @default 600 */
  readonly resyncFrequencySeconds?: number;
}

/** The Stack object. Credentials come from Secrets the team creates, never from this file. */
export function renderOperatorStack(a: OperatorStackArgs): Record<string, unknown> {
  const name = `winfleet-${a.stack.split("/").pop() ?? "stack"}`.toLowerCase().replace(/[^a-z0-9-]/g, "-");
  const secret = (key: string, secretName: string): Record<string, unknown> => ({ type: "Secret", secret: { name: secretName, key } });
  return {
    apiVersion: "pulumi.com/v1",
    kind: "Stack",
    metadata: { name, namespace: a.namespace ?? "pulumi-operator", labels: { "app.kubernetes.io/part-of": "winfleet" } },
    spec: {
      stack: a.stack,
      projectRepo: a.projectRepo,
      branch: a.branch ?? "main",
      repoDir: ".",
      // pulumi up --refresh on every run: drift in the cloud is corrected, not only reported.
      refresh: true,
      continueResyncOnCommitMatch: true,
      resyncFrequencySeconds: a.resyncFrequencySeconds ?? 600,
      destroyOnFinalize: false,
      serviceAccountName: "winfleet-deployer",
      envRefs: {
        PULUMI_ACCESS_TOKEN: secret("accessToken", "pulumi-api"),
        ARM_CLIENT_ID: secret("clientId", "winfleet-azure"),
        ARM_CLIENT_SECRET: secret("clientSecret", "winfleet-azure"),
        ARM_TENANT_ID: secret("tenantId", "winfleet-azure"),
        ARM_SUBSCRIPTION_ID: secret("subscriptionId", "winfleet-azure"),
      },
    },
  };
}

/** The Stack as YAML, with a header saying how to use it. */
export function operatorStackYaml(a: OperatorStackArgs): string {
  return `# A Pulumi Kubernetes Operator Stack that deploys winfleet stack ${a.stack} from ${a.projectRepo}.\n# Create the Secrets it names (pulumi-api, winfleet-azure) and the ServiceAccount winfleet-deployer first.\n${toYaml(renderOperatorStack(a))}`;
}
