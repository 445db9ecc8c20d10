/**
 * `ClusterJoin`: the cluster side of joining Windows nodes — the agent's
 * namespace, service accounts and least-privilege RBAC, plus a kubeadm
 * bootstrap token with its TLS-bootstrap bindings or the RKE2 join token kept
 * as a Secret. Exposes what the nodes' content needs to join: the variables
 * and the token (a Pulumi secret) under the variable name content reads.
 */
import * as pulumi from "@pulumi/pulumi";
import type { FleetConfig } from "../infra/config";
import { renderAgentAccess, renderKubeadmJoin, renderRke2Join } from "./cluster-render";
import { kubeResource } from "./kube-objects";

/** Arguments of {@link ClusterJoin}. */
export interface ClusterJoinArgs {
  /** The winfleet namespace. @default "winfleet-system" */
  readonly namespace: string;
  /** How nodes join (the stack's `cluster.join`). */
  readonly join: NonNullable<FleetConfig["cluster"]>["join"];
  /** The join secret: the bootstrap token's 16-character secret (kubeadm) or the RKE2 token. */
  readonly secret: pulumi.Input<string>;
}

/** The agent's cluster side and the join credentials. */
export class ClusterJoin extends pulumi.ComponentResource {
  /** Non-secret values content needs to join (KUBE_API_SERVER and KUBE_CA_CERT_HASH, or RKE2_SERVER). */
  readonly variables: Readonly<Record<string, string>>;
  /** The content variable the token is handed over as. */
  readonly tokenVariable: string;
  /** The token nodes join with (`<id>.<secret>` for kubeadm), a secret. */
  readonly token: pulumi.Output<string>;

  constructor(name: string, args: ClusterJoinArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:ClusterJoin", name, {}, opts);
    const secret = pulumi.secret(args.secret);
    const objects = [...renderAgentAccess(args.namespace)];
    if (args.join.method === "kubeadm") {
      objects.push(...renderKubeadmJoin(args.join.tokenId, secret, "winfleet Windows nodes", args.join.tokenExpiry));
      this.variables = { KUBE_API_SERVER: args.join.apiServer, KUBE_CA_CERT_HASH: args.join.caCertHash };
      this.tokenVariable = "KUBE_BOOTSTRAP_TOKEN";
      const tokenId = args.join.tokenId;
      this.token = pulumi.secret(secret.apply((s) => `${tokenId}.${s}`));
    } else {
      objects.push(...renderRke2Join(args.namespace, args.join.server, secret));
      this.variables = { RKE2_SERVER: args.join.server };
      this.tokenVariable = "RKE2_TOKEN";
      this.token = secret;
    }
    const namespaced = objects.filter((o) => o.kind !== "Namespace");
    const ns = objects.filter((o) => o.kind === "Namespace").map((o) => kubeResource(name, o, { parent: this }));
    for (const o of namespaced) kubeResource(name, o, { parent: this, dependsOn: ns });
    this.registerOutputs({ variables: this.variables, tokenVariable: this.tokenVariable });
  }
}
