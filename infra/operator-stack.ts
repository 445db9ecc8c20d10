/**
 * For teams that run GitOps in the cluster: a `Stack` for the Pulumi
 * Kubernetes Operator (pulumi.com/v1) that deploys a winfleet stack from Git,
 * re-running it on every commit to the branch and, with the same commit, on a
 * timer — the operator's drift correction. `winfleet operator-stack` prints it
 * with the ServiceAccount its workspace runs as and that account's access:
 * `system:auth-delegator`, with which the workspace checks the operator's (v2)
 * requests to it, and the roles deployer-access.ts derives from the objects
 * this stack's program creates (not `cluster-admin`). The workspace reaches
 * the cluster with its in-cluster credentials, so all of this goes into the
 * cluster the stack deploys to; it reaches Azure as a federated identity, with
 * a service-account token projected for Entra ID, never a client secret.
 */
import { type CreatedObject, renderDeployerAccess } from "./deployer-access";

export type { CreatedObject } from "./deployer-access";
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

/** The ServiceAccount the workspace runs as. */
export const DEPLOYER_ACCOUNT = "winfleet-deployer";

/** Where the workspace reads its projected token for Azure (OIDC), and the audience Entra ID expects in it. */
export const AZURE_TOKEN = {
  dir: "/var/run/secrets/winfleet/azure",
  file: "token",
  audience: "api://AzureADTokenExchange",
} as const;

/**
 * The workspace's ServiceAccount, its binding to system:auth-delegator, and the access the
 * stack's program needs (`objects`: what it creates in the cluster).
 */
export function renderOperatorAccess(
  a: Pick<OperatorStackArgs, "namespace">,
  objects: readonly CreatedObject[],
): Record<string, unknown>[] {
  const namespace = a.namespace ?? "pulumi-operator";
  const labels = { "app.kubernetes.io/part-of": "winfleet" };
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: DEPLOYER_ACCOUNT, namespace, labels } },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      // The namespace in the name: each operator namespace's deployer has bindings of its own.
      metadata: {
        name: `${namespace}:${DEPLOYER_ACCOUNT}:system:auth-delegator`,
        labels,
        annotations: {
          "winfleet.io/why":
            "the workspace checks the Pulumi Kubernetes Operator's requests to it (TokenReview, SubjectAccessReview)",
        },
      },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "system:auth-delegator" },
      subjects: [{ kind: "ServiceAccount", name: DEPLOYER_ACCOUNT, namespace }],
    },
    ...renderDeployerAccess({
      account: { name: DEPLOYER_ACCOUNT, namespace },
      objects,
      prefix: `${namespace}:${DEPLOYER_ACCOUNT}`,
    }),
  ];
}

/** The Stack object. Credentials come from Secrets the team creates, never from this file. */
export function renderOperatorStack(a: OperatorStackArgs): Record<string, unknown> {
  const name = `winfleet-${a.stack.split("/").pop() ?? "stack"}`.toLowerCase().replace(/[^a-z0-9-]/g, "-");
  const secret = (key: string, secretName: string): Record<string, unknown> => ({
    type: "Secret",
    secret: { name: secretName, key },
  });
  return {
    apiVersion: "pulumi.com/v1",
    kind: "Stack",
    metadata: {
      name,
      namespace: a.namespace ?? "pulumi-operator",
      labels: { "app.kubernetes.io/part-of": "winfleet" },
    },
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
      serviceAccountName: DEPLOYER_ACCOUNT,
      envRefs: {
        PULUMI_ACCESS_TOKEN: secret("accessToken", "pulumi-api"),
        ARM_CLIENT_ID: secret("clientId", "winfleet-azure"),
        ARM_TENANT_ID: secret("tenantId", "winfleet-azure"),
        ARM_SUBSCRIPTION_ID: secret("subscriptionId", "winfleet-azure"),
      },
      // Azure through a federated credential: Entra ID trusts this service account's token (its
      // issuer and subject system:serviceaccount:<namespace>:winfleet-deployer), so no client
      // secret exists to be stored or leaked.
      workspaceTemplate: {
        spec: {
          env: [
            { name: "ARM_USE_OIDC", value: "true" },
            { name: "ARM_OIDC_TOKEN_FILE_PATH", value: `${AZURE_TOKEN.dir}/${AZURE_TOKEN.file}` },
          ],
          podTemplate: {
            spec: {
              containers: [
                { name: "pulumi", volumeMounts: [{ name: "azure-token", mountPath: AZURE_TOKEN.dir, readOnly: true }] },
              ],
              volumes: [
                {
                  name: "azure-token",
                  projected: {
                    sources: [
                      {
                        serviceAccountToken: {
                          path: AZURE_TOKEN.file,
                          audience: AZURE_TOKEN.audience,
                          expirationSeconds: 3600,
                        },
                      },
                    ],
                  },
                },
              ],
            },
          },
        },
      },
    },
  };
}

/**
 * The ServiceAccount, its access to what `objects` (the stack's cluster side) holds, and the
 * Stack, as one YAML stream, with a header saying how to use it.
 */
export function operatorStackYaml(a: OperatorStackArgs, objects: readonly CreatedObject[]): string {
  const docs = [...renderOperatorAccess(a, objects), renderOperatorStack(a)].map((d) => toYaml(d)).join("---\n");
  return `# A Pulumi Kubernetes Operator Stack that deploys winfleet stack ${a.stack} from ${a.projectRepo},
# with the ServiceAccount its workspace runs as and the access that stack's program needs (regenerate
# this when the stack's cluster side changes). Apply it in the cluster the stack deploys to (the
# workspace uses its in-cluster credentials), after creating the Secrets the Stack names (pulumi-api,
# winfleet-azure) and a federated credential for the service account (docs/azure.md).
${docs}`;
}
