/**
 * Names of what a stack puts into a cluster beyond its own namespace. Two stacks may share a
 * cluster (a dev fleet and a lab fleet, say): whatever is cluster-scoped (ClusterRoles and
 * their bindings) or lives in a namespace both use (kube-system), the default namespace, and
 * the labels an upgrader selects its nodes by carry the stack's name, so one stack's `up`
 * never rewrites the other's objects and its `destroy` never deletes them. Every component
 * that adds such an object names it with {@link clusterScopedName}.
 */
import { createHash } from "node:crypto";

/** The node label naming the stack a node belongs to (set at join, selected by the stack's upgraders). */
export const STACK_LABEL = "winfleet.io/stack";

/**
 * The stack's name as it may appear in object names and label values: lower-case letters,
 * digits and '-', at most 40 characters. A name that had to change to get there (upper case,
 * other characters, length) gets 8 hex digits of its SHA-256, so `Dev` and `dev` stay apart.
 */
export function stackSlug(stack: string): string {
  const plain = stack
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "");
  if (plain === stack && plain.length > 0 && plain.length <= 40) return plain;
  const hash = createHash("sha256").update(stack).digest("hex").slice(0, 8);
  return `${plain.slice(0, 31).replace(/-$/, "") || "stack"}-${hash}`;
}

/**
 * The name of an object a stack creates outside its namespace: `winfleet:<stack>:<name>`
 * (ClusterRoles, ClusterRoleBindings, Roles and bindings in kube-system).
 */
export function clusterScopedName(stack: string, name: string): string {
  return `winfleet:${stackSlug(stack)}:${name}`;
}

/** The namespace a stack's cluster side goes into when the stack names none: `winfleet-<stack>`. */
export function defaultNamespace(stack: string): string {
  return `winfleet-${stackSlug(stack)}`;
}
