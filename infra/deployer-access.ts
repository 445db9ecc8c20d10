/**
 * What an identity needs in a cluster to run a stack's program there — the
 * Pulumi Kubernetes Operator's workspace, or any deployer — derived from the
 * objects the program creates, not `cluster-admin`:
 *
 * - cluster-scoped objects (the namespace, ClusterRoles, ClusterRoleBindings):
 *   `create`, `list` and `watch` (Pulumi's provider watches a kind to see a
 *   delete through), and the other verbs on exactly those names; `escalate` on the
 *   ClusterRoles it writes and `bind` on the roles its bindings name (RBAC lets
 *   no one grant what they do not hold otherwise);
 * - objects in a namespace that exists already (kube-system: the bootstrap
 *   token, Calico's kubeadm-config Role): a Role there, with the same shape;
 * - the namespaces the program creates: the namespace itself, a Role with every
 *   verb on the kinds the program puts there (a content ConfigMap's name follows
 *   the content), and its binding, applied before the program first runs.
 *
 * It stays powerful by nature: whoever creates a bootstrap token can register
 * nodes; whoever may create Secrets in kube-system can ask the token controller
 * for a token of any service account there, and the provider's watch of
 * kube-system's Secrets reads them all; the upgraders are privileged HostProcess
 * DaemonSets. What it no longer holds is the rest: Secrets anywhere else,
 * writing any other object, binding any other role.
 */

/** An object the program creates, as far as access goes. */
export interface CreatedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
  /** A binding's role. */
  readonly roleRef?: { readonly kind: string; readonly name: string };
  /**
   * Someone else's object the program only patches (a `...Patch` resource: server-side apply of
   * some fields) or reads (`X.get`): it is meant to exist already, and a read needs only `get`.
   */
  readonly shared?: "patch" | "read";
}

type Obj = Record<string, unknown>;
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

const RBAC = "rbac.authorization.k8s.io";
const NAMED = ["get", "patch", "update", "delete"];
/**
 * Pulumi's Kubernetes provider confirms a delete with an informer on the object's kind in its
 * namespace (cluster-wide for cluster-scoped kinds), which lists and watches every object of that
 * kind there (pulumi-kubernetes `pkg/await/await.go`, `Deletion`: `condition.NewDeletionSource`);
 * a name cannot narrow it, and without it a destroy waits out its 10-minute timeout.
 */
const WATCH = ["list", "watch"];
const EVERY = ["get", "list", "watch", "create", "patch", "update", "delete"];

const groupOf = (apiVersion: string): string => (apiVersion.includes("/") ? (apiVersion.split("/")[0] ?? "") : "");
// Kubernetes' resource name for a kind (the kinds the program creates are all regular plurals).
const resourceOf = (kind: string): string => `${kind.toLowerCase()}${kind.endsWith("s") ? "es" : "s"}`;
const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

/** The objects' names by `group/resource`, in key order. */
function byResource(objects: readonly CreatedObject[]): [{ group: string; resource: string }, string[]][] {
  const groups = new Map<string, { at: { group: string; resource: string }; names: string[] }>();
  for (const o of objects) {
    const at = { group: groupOf(o.apiVersion), resource: resourceOf(o.kind) };
    const key = `${at.group}/${at.resource}`;
    const entry = groups.get(key) ?? { at, names: [] };
    entry.names.push(o.metadata.name);
    groups.set(key, entry);
  }
  return [...groups].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, { at, names }]) => [at, sorted(names)]);
}

/**
 * Rules that let an identity create these objects and manage them by name, patch and read by name
 * those that are someone else's (never create or delete them); roles it may write and bind.
 */
function namedRules(objects: readonly CreatedObject[], roleKind: "ClusterRole" | "Role"): Rule[] {
  const rules: Rule[] = [];
  const rule = (at: { group: string; resource: string }, verbs: string[], names?: string[]): Rule => ({
    apiGroups: [at.group],
    resources: [at.resource],
    verbs: [...verbs],
    ...(names ? { resourceNames: names } : {}),
  });
  const created = objects.filter((o) => o.shared === undefined);
  for (const [at, names] of byResource(created)) rules.push(rule(at, ["create", ...WATCH]), rule(at, NAMED, names));
  // The same object: one rule set, the widest access, covers it.
  const among = (xs: readonly CreatedObject[], o: CreatedObject): boolean =>
    xs.some((x) => x.kind === o.kind && x.apiVersion === o.apiVersion && x.metadata.name === o.metadata.name);
  const patched = objects.filter((o) => o.shared === "patch" && !among(created, o));
  for (const [at, names] of byResource(patched)) rules.push(rule(at, ["get", "patch"], names));
  const read = objects.filter((o) => o.shared === "read" && !among(created, o) && !among(patched, o));
  for (const [at, names] of byResource(read)) rules.push(rule(at, ["get"], names));
  const written = objects.filter((o) => o.kind === roleKind).map((o) => o.metadata.name);
  if (written.length > 0)
    rules.push({
      apiGroups: [RBAC],
      resources: [resourceOf(roleKind)],
      verbs: ["escalate"],
      resourceNames: sorted(written),
    });
  const bound = objects
    .filter((o) => o.roleRef?.kind === roleKind)
    .map((o) => o.roleRef?.name ?? "")
    .filter((n) => n !== "");
  if (bound.length > 0)
    rules.push({ apiGroups: [RBAC], resources: [resourceOf(roleKind)], verbs: ["bind"], resourceNames: sorted(bound) });
  return rules;
}

/** Options of {@link renderDeployerAccess}. */
export interface DeployerAccessArgs {
  /** The deployer's ServiceAccount and its namespace. */
  readonly account: { readonly name: string; readonly namespace: string };
  /** What the program creates in the cluster. */
  readonly objects: readonly CreatedObject[];
  /** The roles' and bindings' name, so two deployers never share one. */
  readonly prefix: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/**
 * The roles and bindings of {@link DeployerAccessArgs.account}, and the namespaces the program creates, in apply
 * order.
 */
export function renderDeployerAccess(a: DeployerAccessArgs): Obj[] {
  const labels = { "app.kubernetes.io/part-of": "winfleet", ...a.labels };
  const subjects = [{ kind: "ServiceAccount", name: a.account.name, namespace: a.account.namespace }];
  const name = a.prefix;
  const created = new Set(a.objects.filter((o) => o.kind === "Namespace").map((o) => o.metadata.name));
  const clusterScoped = a.objects.filter((o) => o.metadata.namespace === undefined);
  const out: Obj[] = [];
  // The namespaces first: the Roles below live in them.
  for (const ns of sorted(created)) out.push({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns, labels } });
  out.push(
    {
      apiVersion: `${RBAC}/v1`,
      kind: "ClusterRole",
      metadata: { name, labels },
      // Events too: the provider reports each object's Events while it waits on it.
      rules: [
        ...namedRules(clusterScoped, "ClusterRole"),
        { apiGroups: [""], resources: ["events"], verbs: [...WATCH] },
      ],
    },
    {
      apiVersion: `${RBAC}/v1`,
      kind: "ClusterRoleBinding",
      metadata: { name, labels },
      roleRef: { apiGroup: RBAC, kind: "ClusterRole", name },
      subjects,
    },
  );
  const namespaces = sorted(a.objects.map((o) => o.metadata.namespace ?? "").filter((n) => n !== ""));
  for (const ns of namespaces) {
    const here = a.objects.filter((o) => o.metadata.namespace === ns);
    const rules: Rule[] = created.has(ns)
      ? [...new Map(here.map((o) => [`${groupOf(o.apiVersion)}/${resourceOf(o.kind)}`, o])).entries()]
          .sort(([x], [y]) => (x < y ? -1 : 1))
          .map(([, o]) => ({ apiGroups: [groupOf(o.apiVersion)], resources: [resourceOf(o.kind)], verbs: [...EVERY] }))
      : namedRules(here, "Role");
    // A Role in a namespace the program makes is the program's to write: it may bind its own.
    if (created.has(ns))
      rules.push(...namedRules(here, "Role").filter((r) => r.verbs[0] === "escalate" || r.verbs[0] === "bind"));
    out.push(
      { apiVersion: `${RBAC}/v1`, kind: "Role", metadata: { name, namespace: ns, labels }, rules },
      {
        apiVersion: `${RBAC}/v1`,
        kind: "RoleBinding",
        metadata: { name, namespace: ns, labels },
        roleRef: { apiGroup: RBAC, kind: "Role", name },
        subjects,
      },
    );
  }
  return out;
}
