/**
 * `ClusterJoin`: the cluster side of joining Windows nodes — the agent's
 * namespace, service accounts and least-privilege RBAC, plus, on kubeadm
 * clusters, a bootstrap token for each node (one per scale set), derived from
 * the stack's token secret and rotated each token lifetime, the TLS-bootstrap
 * bindings, and the approver that signs a node certificate only for the name
 * its token was made for (an RKE2 agent's token needs nothing in the cluster).
 * On kubeadm clusters also kube-proxy's and Calico's own service accounts, least-privilege
 * roles and tokens. Exposes what the nodes' content needs: the variables, and
 * each node's secrets (its join token under the variable name content reads,
 * KUBE_PROXY_TOKEN and CALICO_TOKEN) as Pulumi secrets.
 */
import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import {
  CALICO_TOKEN_SECRET,
  KUBE_PROXY_TOKEN_SECRET,
  renderAgentAccess,
  renderBootstrapToken,
  renderCalicoAccess,
  renderKubeProxyAccess,
  renderNodeApproval,
  renderTlsBootstrapAccess,
} from "./cluster-render";
import { kubeResource } from "./kube-objects";
import {
  type NodeToken,
  type PoolNodes,
  allowedNames,
  nodeTokens,
  parseLifetime,
  tokenEpoch,
  tokenExpiration,
  tokenSecretOf,
} from "./node-tokens";

/** How nodes join: a kubeadm TLS bootstrap with a bootstrap token winfleet creates, or an RKE2 agent. */
export type JoinArgs =
  | {
      readonly method: "kubeadm";
      /** The API server endpoint, e.g. https://10.0.0.4:6443. */
      readonly apiServer: string;
      /** kubeadm discovery: `sha256:<hex>` of the cluster CA's public key. */
      readonly caCertHash: string;
      /** Six characters that, with the stack's name, seed the node tokens' ids (another stack's differ). */
      readonly tokenId: string;
      /** How long each epoch of tokens lasts (`24h`, `7d`); a token is good for one to two of them. */
      readonly tokenLifetime: string;
      /** No token outlives this (ISO 8601); it must be at least a lifetime away. */
      readonly tokenExpiry?: string | undefined;
      /** An image that carries the agent, to run the approver in the cluster; absent, run it yourself. */
      readonly approverImage?: string | undefined;
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
  /** The join secret: what node tokens are derived from (kubeadm), or the RKE2 token. */
  readonly secret: pulumi.Input<string>;
  /** The nodes that join (kubeadm): each by name, a scale set by its name prefix. */
  readonly nodes?: readonly PoolNodes[];
  /** Seeds the token ids with the stack's identity. @default "" */
  readonly seed?: string;
  /** The time tokens are derived for. @default the time the program runs */
  readonly now?: Date;
}

/** The agent's cluster side and the join credentials. */
export class ClusterJoin extends pulumi.ComponentResource {
  /** Non-secret values content needs to join (KUBE_API_SERVER and KUBE_CA_CERT_HASH, or RKE2_SERVER). */
  readonly variables: Readonly<Record<string, string>>;
  /** The content variable the token is handed over as. */
  readonly tokenVariable: string;
  /** The node tokens (kubeadm): id and what each is for; none for RKE2. */
  readonly tokens: readonly NodeToken[];
  /** When the tokens declared now expire (kubeadm). */
  readonly tokenExpiration: string | undefined;
  /**
   * The secret variables the nodes need from the cluster side, shared by all: on kubeadm clusters
   * KUBE_PROXY_TOKEN and CALICO_TOKEN (kube-proxy's and Calico's service-account tokens, which their
   * components turn into their kubeconfigs); on RKE2, the join token.
   */
  readonly secrets: Readonly<Record<string, pulumi.Output<string>>>;
  private readonly tokenValues = new Map<string, pulumi.Output<string>>();

  constructor(name: string, args: ClusterJoinArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:ClusterJoin", name, {}, opts);
    const secret = pulumi.secret(args.secret);
    const objects = [...renderAgentAccess(args.namespace, args.stack)];
    const tokenSecrets: { object: ReturnType<typeof renderBootstrapToken>; logical: string }[] = [];
    let shared: pulumi.Output<string> | undefined;
    if (args.join.method === "kubeadm") {
      const timing = { lifetimeSeconds: parseLifetime(args.join.tokenLifetime), notAfter: args.join.tokenExpiry };
      const now = args.now ?? new Date();
      if (timing.notAfter !== undefined && Date.parse(timing.notAfter) < now.getTime() + timing.lifetimeSeconds * 1000)
        throw new pulumi.ResourceError(
          `cluster.join.tokenExpiry ${timing.notAfter} is less than one token lifetime (${args.join.tokenLifetime}) away: nodes could not join with the tokens it allows. Move it later, or remove it (tokens rotate each lifetime)`,
          this,
        );
      const epoch = tokenEpoch(now, timing);
      this.tokenExpiration = tokenExpiration(epoch, timing);
      this.tokens = nodeTokens(`${args.seed ?? ""}\0${args.join.tokenId}`, args.nodes ?? []);
      for (const t of this.tokens) {
        const value = pulumi.secret(secret.apply((s) => tokenSecretOf(s, epoch, t)));
        this.tokenValues.set(key(t.pool, t.node), pulumi.secret(value.apply((v) => `${t.id}.${v}`)));
        tokenSecrets.push({
          object: renderBootstrapToken(
            {
              id: t.id,
              secret: value,
              expiration: this.tokenExpiration,
              pool: t.pool,
              stack: args.stack,
              ...(t.node ? { node: t.node } : {}),
            },
            `winfleet: ${t.node !== undefined ? `node ${t.node}` : `scale set ${t.prefix ?? ""}*`} of pool ${t.pool}`,
          ),
          logical: `${name}-bootstrap-token-${t.pool}-${t.node ?? "scale-set"}`,
        });
      }
      objects.push(
        ...renderTlsBootstrapAccess(args.stack),
        ...renderNodeApproval(
          args.namespace,
          args.stack,
          this.tokens.map((t) => ({ id: t.id, ...allowedNames(t) })),
          args.join.approverImage,
        ),
      );
      this.variables = { KUBE_API_SERVER: args.join.apiServer, KUBE_CA_CERT_HASH: args.join.caCertHash };
      this.tokenVariable = "KUBE_BOOTSTRAP_TOKEN";
    } else {
      // The RKE2 agent token reaches the nodes as their secret variable and nothing else: no object in
      // the cluster holds it.
      this.variables = { RKE2_SERVER: args.join.server };
      this.tokenVariable = "RKE2_TOKEN";
      this.tokens = [];
      this.tokenExpiration = undefined;
      shared = secret;
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
    // Registered by node, not by token id: the next epoch's token replaces this one (a new id, the old one deleted).
    for (const t of tokenSecrets) kubeResource(name, t.object, { parent: this }, t.logical);
    const secrets: Record<string, pulumi.Output<string>> = shared ? { [this.tokenVariable]: shared } : {};
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

  /**
   * The secret variables of one node: its own join token (kubeadm: the token of `node`, or of the
   * scale set `pool` when `node` is absent) and the shared ones ({@link secrets}).
   */
  secretsFor(pool: string, node?: string): Readonly<Record<string, pulumi.Output<string>>> {
    if (this.tokenVariable !== "KUBE_BOOTSTRAP_TOKEN") return this.secrets;
    const token = this.tokenValues.get(key(pool, node));
    if (!token) throw new Error(`no join token was declared for ${node ?? "the scale set"} of pool ${pool}`);
    return { ...this.secrets, [this.tokenVariable]: token };
  }
}

const key = (pool: string, node: string | undefined): string => `${pool}\0${node ?? ""}`;
