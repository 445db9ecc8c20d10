/**
 * For teams that run GitOps in the cluster: a `Stack` for the Pulumi
 * Kubernetes Operator (pulumi.com/v1) that deploys a winfleet stack from Git,
 * re-running it on every commit to the branch and, with the same commit, on a
 * timer — the operator's drift correction. `winfleet operator-stack` prints it
 * with the ServiceAccount its workspace runs as and that account's two
 * bindings: `system:auth-delegator`, with which the workspace checks the
 * operator's (v2) requests to it, and `cluster-admin`, since the program itself creates
 * cluster-scoped RBAC (including bindings to `system:node-bootstrapper`, which
 * only a holder of its rights may grant) and Secrets in kube-system. The
 * workspace reaches the cluster with its in-cluster credentials, so all of
 * this goes into the cluster the stack deploys to.
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

/** The ServiceAccount the workspace runs as. */
export const DEPLOYER_ACCOUNT = "winfleet-deployer";

/** The workspace's ServiceAccount and its two ClusterRoleBindings. */
export function renderOperatorAccess(a: Pick<OperatorStackArgs, "namespace">): Record<string, unknown>[] {
  const namespace = a.namespace ?? "pulumi-operator";
  const labels = { "app.kubernetes.io/part-of": "winfleet" };
  const subjects = [{ kind: "ServiceAccount", name: DEPLOYER_ACCOUNT, namespace }];
  const bind = (role: string, why: string): Record<string, unknown> => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    // The namespace in the name: each operator namespace's deployer has bindings of its own.
    metadata: { name: `${namespace}:${DEPLOYER_ACCOUNT}:${role}`, labels, annotations: { "winfleet.io/why": why } },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects,
  });
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: DEPLOYER_ACCOUNT, namespace, labels } },
    bind(
      "system:auth-delegator",
      "the workspace checks the Pulumi Kubernetes Operator's requests to it (TokenReview, SubjectAccessReview)",
    ),
    bind(
      "cluster-admin",
      "the winfleet program creates ClusterRoles, bindings to system:node-bootstrapper and Secrets in kube-system",
    ),
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
        ARM_CLIENT_SECRET: secret("clientSecret", "winfleet-azure"),
        ARM_TENANT_ID: secret("tenantId", "winfleet-azure"),
        ARM_SUBSCRIPTION_ID: secret("subscriptionId", "winfleet-azure"),
      },
    },
  };
}

/** The ServiceAccount, its bindings and the Stack, as one YAML stream, with a header saying how to use it. */
export function operatorStackYaml(a: OperatorStackArgs): string {
  const docs = [...renderOperatorAccess(a), renderOperatorStack(a)].map((d) => toYaml(d)).join("---\n");
  return `# A Pulumi Kubernetes Operator Stack that deploys winfleet stack ${a.stack} from ${a.projectRepo},
# with the ServiceAccount its workspace runs as and that account's bindings. Apply it in the cluster
# the stack deploys to (the workspace uses its in-cluster credentials), after creating the Secrets
# the Stack names (pulumi-api, winfleet-azure).
${docs}`;
}
