/**
 * `ClusterJoin`: the cluster side of joining Windows nodes — the agent's
 * namespace, service accounts and least-privilege RBAC, plus a kubeadm
 * bootstrap token with its TLS-bootstrap bindings or the RKE2 join token kept
 * as a Secret; on kubeadm clusters also kube-proxy's and Calico's own service
 * accounts, least-privilege roles and tokens. Exposes what the nodes' content
 * needs: the variables, and the secrets (the join token under the variable
 * name content reads, KUBE_PROXY_TOKEN and CALICO_TOKEN) as Pulumi secrets.
 */
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import {
  CALICO_TOKEN_SECRET,
  KUBE_PROXY_TOKEN_SECRET,
  renderAgentAccess,
  renderCalicoAccess,
  renderKubeProxyAccess,
  renderKubeadmJoin,
  renderRke2Join,
} from "./cluster-render";
import { kubeResource } from "./kube-objects";

/** How nodes join: a kubeadm TLS bootstrap with a bootstrap token winfleet creates, or an RKE2 agent. */
export type JoinArgs =
  | {
      readonly method: "kubeadm";
      /** The API server endpoint, e.g. https://10.0.0.4:6443. */
      readonly apiServer: string;
      /** kubeadm discovery: `sha256:<hex>` of the cluster CA's public key. */
      readonly caCertHash: string;
      /** The bootstrap token's id (6 characters); its Secret `bootstrap-token-<id>` must not exist yet. */
      readonly tokenId: string;
      /** When the token stops working (ISO 8601); absent, it never does. */
      readonly tokenExpiry?: string | undefined;
    }
  | {
      readonly method: "rke2";
      /** The RKE2 server's supervisor address, e.g. https://rke2.example:9345. */
      readonly server: string;
    };

/** Arguments of {@link ClusterJoin}. */
export interface ClusterJoinArgs {
  /** The stack's winfleet namespace (by default `winfleet-<stack>`, stack-names.ts). */
  readonly namespace: string;
  /** The stack's name: it names what lies outside the namespace, and labels everything. */
  readonly stack: string;
  /** How nodes join. */
  readonly join: JoinArgs;
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
  /**
   * Every secret variable the nodes need from the cluster side: the join token under
   * {@link tokenVariable}, and on kubeadm clusters KUBE_PROXY_TOKEN and CALICO_TOKEN (kube-proxy's
   * and Calico's service-account tokens, which their components turn into their kubeconfigs).
   */
  readonly secrets: Readonly<Record<string, pulumi.Output<string>>>;

  constructor(name: string, args: ClusterJoinArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:ClusterJoin", name, {}, opts);
    const secret = pulumi.secret(args.secret);
    const objects = [...renderAgentAccess(args.namespace, args.stack)];
    if (args.join.method === "kubeadm") {
      objects.push(
        ...renderKubeadmJoin(args.stack, args.join.tokenId, secret, "winfleet Windows nodes", args.join.tokenExpiry),
      );
      this.variables = { KUBE_API_SERVER: args.join.apiServer, KUBE_CA_CERT_HASH: args.join.caCertHash };
      this.tokenVariable = "KUBE_BOOTSTRAP_TOKEN";
      const tokenId = args.join.tokenId;
      this.token = pulumi.secret(secret.apply((s) => `${tokenId}.${s}`));
    } else {
      objects.push(...renderRke2Join(args.namespace, args.stack, args.join.server, secret));
      this.variables = { RKE2_SERVER: args.join.server };
      this.tokenVariable = "RKE2_TOKEN";
      this.token = secret;
    }
    if (args.join.method === "kubeadm")
      objects.push(
        ...renderKubeProxyAccess(args.namespace, args.stack),
        ...renderCalicoAccess(args.namespace, args.stack),
      );
    const namespaced = objects.filter((o) => o.kind !== "Namespace");
    const ns = objects.filter((o) => o.kind === "Namespace").map((o) => kubeResource(name, o, { parent: this }));
    const created = new Map<string, pulumi.CustomResource>();
    // The token Secret after its service account: the token controller only fills a Secret whose account exists.
    const accounts = namespaced
      .filter((o) => o.kind === "ServiceAccount")
      .map((o) => kubeResource(name, o, { parent: this, dependsOn: ns }));
    for (const o of namespaced.filter((x) => x.kind !== "ServiceAccount"))
      created.set(
        `${o.kind}/${o.metadata.name}`,
        kubeResource(name, o, { parent: this, dependsOn: [...ns, ...accounts] }),
      );
    const secrets: Record<string, pulumi.Output<string>> = { [this.tokenVariable]: this.token };
    for (const [variable, name] of [
      ["KUBE_PROXY_TOKEN", KUBE_PROXY_TOKEN_SECRET],
      ["CALICO_TOKEN", CALICO_TOKEN_SECRET],
    ] as const) {
      const tokenSecret = created.get(`Secret/${name}`) as k8s.core.v1.Secret | undefined;
      if (!tokenSecret) continue;
      // The provider waits until the token controller has filled the Secret's data.
      secrets[variable] = pulumi.secret(
        tokenSecret.data.apply((data) => {
          const token = data.token;
          if (token === undefined || token === "")
            throw new Error(
              `the cluster did not fill ${name}'s token (is the service-account token controller running?)`,
            );
          return Buffer.from(token, "base64").toString("utf8");
        }),
      );
    }
    this.secrets = secrets;
    this.registerOutputs({ variables: this.variables, tokenVariable: this.tokenVariable });
  }
}
