/**
 * Everything a stack declares, as one zod schema: the single definition of the
 * stack config. Values live under the project namespace (`winfleet:`): the
 * structured `winfleet:fleet`, and secrets as separate secure keys that the fleet
 * config names (`adminPasswordSecret: adminPassword` → `winfleet:adminPassword`).
 * Bad config fails before any resource is registered, naming the key path.
 */
import { z } from "zod";
import { drainSettingsSchema, ed25519PublicKey, ValidationError, zodIssues } from "../agent/common";
import { nodeLabelProblems, variableName } from "../agent/content";
import { parseLifetime } from "../components";
import { oneSubscription } from "./subscription";

export { azureSubscription } from "./subscription";

const name = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/, "lower-case letters, digits and '-', at most 40 characters");
const secretRef = z.string().regex(/^[A-Za-z][A-Za-z0-9_-]*$/, "the name of a secure config key, e.g. adminPassword");
const sha256 = z.string().regex(/^[0-9a-f]{64}$/, "64 lower-case hex digits");
const subscriptionId = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, "an Azure subscription id");
/**
 * Text that `pulumi config set --path` may have stored as a number or a
 * boolean (it stores integers and true/false that way): taken as the text that
 * was typed. Anything else still fails as the string schema says, at its path.
 */
const text = <T extends z.ZodType>(schema: T): z.ZodPreprocess<T> =>
  z.preprocess((v) => (typeof v === "number" || typeof v === "boolean" ? String(v) : v), schema);
const version = text(z.string().regex(/^[0-9A-Za-z][0-9A-Za-z.+-]*$/, "a version"));
/** Values for content commands (a template's variables), by variable name. */
const variables = z.record(variableName, text(z.string()));

/**
 * Variables winfleet itself sets on every node, from `cluster.join` and the
 * pool (the contract the Windows content's join components read); a stack
 * cannot set them through `variables` or `secrets`.
 */
export const JOIN_VARIABLES = {
  KUBE_API_SERVER: "cluster.join.apiServer",
  KUBE_CA_CERT_HASH: "cluster.join.caCertHash",
  KUBE_BOOTSTRAP_TOKEN: "cluster.join.tokenId and tokenSecret",
  RKE2_SERVER: "cluster.join.server",
  RKE2_TOKEN: "cluster.join.tokenSecret",
  KUBE_NODE_LABELS: "the pool's labels",
  KUBE_REGISTER_TAINT: "the pool's registerTaint",
} as const;

/** The cluster's service CIDR when the stack names none: kubeadm's default. */
export const DEFAULT_SERVICE_CIDR = "10.96.0.0/12";

/** How nodes join the cluster. */
const joinSchema = z.discriminatedUnion("method", [
  z.strictObject({
    method: z.literal("kubeadm"),
    /** API server endpoint, e.g. https://10.0.0.4:6443. */
    apiServer: z.string().url(),
    /** kubeadm discovery: `sha256:<hex>` of the cluster CA's public key. */
    caCertHash: z.string().regex(/^sha256:[0-9a-f]{64}$/, "sha256:<64 hex digits>"),
    /**
     * Six characters that, with the stack's name, seed the ids of the join tokens winfleet makes:
     * one per node (per scale set), `bootstrap-token-<id>` in kube-system, each for its node's name
     * alone (docs/security.md).
     */
    tokenId: text(z.string().regex(/^[a-z0-9]{6}$/, "6 lower-case letters or digits")),
    /** The secure key holding the secret the node tokens are derived from (`openssl rand -hex 8`). */
    tokenSecret: secretRef,
    /**
     * How long an epoch of tokens lasts (`90m`, `24h`, `7d`). The tokens of an epoch expire at the
     * end of the next one, and a run of the program in a later epoch declares new ones: tokens rotate
     * with no one choosing values, as long as a deploy (or the operator's refresh) runs at least once
     * a lifetime. A scale set that grows later needs a token that is still good then.
     */
    tokenLifetime: z
      .string()
      .regex(/^\d+[mhd]$/, "a lifetime such as 24h or 7d")
      .refine((t) => parseLifetime(t) >= 3600, "at least an hour (1h)")
      .default("7d"),
    /**
     * No token outlives this (ISO 8601), whatever its epoch. It must be at least one lifetime in the
     * future when the program runs: a stack whose tokens would expire before nodes could use them fails.
     */
    tokenExpiry: z.iso.datetime().optional(),
    /**
     * An image that carries the agent (Linux, `winfleet-agent` on its PATH as the entry point), to run
     * winfleet's node approver in the cluster. Without it, run `winfleet-agent approve-nodes` yourself
     * with a kubeconfig that may approve node certificates: nothing else signs a new node's certificate.
     */
    approverImage: z.string().min(1).optional(),
  }),
  z.strictObject({
    method: z.literal("rke2"),
    /** RKE2 server, e.g. https://rke2.example:9345. */
    server: z.string().url(),
    tokenSecret: secretRef,
  }),
]);

/** A Windows Server image: a release name or an explicit marketplace image. */
const imageSchema = z.union([
  z.enum(["ws2019", "ws2022", "ws2025"]),
  z.strictObject({ publisher: z.string(), offer: z.string(), sku: z.string(), version: z.string().default("latest") }),
]);

/**
 * Node labels, refused here when the kubelet would refuse them at start (reserved kubernetes.io / k8s.io keys, bad keys
 * or values).
 */
const nodeLabels = z
  .record(z.string(), text(z.string()))
  .superRefine((labels, ctx) => {
    for (const [key, value] of Object.entries(labels)) {
      for (const problem of nodeLabelProblems(`${key}=${value}`))
        ctx.addIssue({ code: "custom", path: [key], message: `${problem}: the kubelet refuses it at start` });
    }
  })
  .default({});

/** How many of a pool's machines a change that must touch them (a bootstrap change, a new image) takes at once. */
const poolMaxUnavailable = z.union([z.number().int().min(1), z.string().regex(/^\d+%$/, "a number or a percentage")]);

const azurePool = z.strictObject({
  name,
  kind: z.literal("azure"),
  location: z.string().min(1),
  resourceGroup: z.string().min(1),
  /** Full resource id of the subnet the nodes join. */
  subnetId: z
    .string()
    .regex(
      /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.Network\/virtualNetworks\/[^/]+\/subnets\/[^/]+$/i,
      "a subnet resource id",
    ),
  vmSize: z.string().min(1).default("Standard_D4s_v5"),
  image: imageSchema.default("ws2022"),
  /** vmss: one scale set; vms: individual VMs (each with its own NIC). */
  mode: z.enum(["vmss", "vms"]).default("vmss"),
  count: z.number().int().min(0).max(1000),
  adminUsername: z.string().min(1).default("winfleet"),
  adminPasswordSecret: secretRef,
  /** Node labels applied at join. */
  labels: nodeLabels,
  /** Register the nodes with the os=windows:NoSchedule taint. @default true */
  registerTaint: z.boolean().default(true),
  /** Values for content commands on this pool's nodes, over `content.variables`. */
  variables: variables.default({}),
  /** A public IP per node; the policy pack refuses it unless allowed. @default false */
  publicIp: z.boolean().default(false),
  /**
   * Machines a bootstrap change (vms: the extension re-runs) or an image change (vms: replaced) takes at once.
   * @default the upgrader's maxUnavailable, else 1
   */
  maxUnavailable: poolMaxUnavailable.optional(),
  /** How the pool's nodes are drained before a disruptive upgrade step; absent: kubectl drain's defaults. */
  drain: drainSettingsSchema.optional(),
});

/** The key types an OpenSSH server presents (what `ssh-keyscan` prints and `connection.hostKey` takes). */
const HOST_KEY_TYPES = [
  "ssh-ed25519",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "ssh-rsa",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
];

/** Why `key` is not a public host key in authorized_keys form (type, base64 blob, optional comment), or undefined. */
export function hostKeyProblem(key: string): string | undefined {
  const [type = "", blob = ""] = key.trim().split(/\s+/);
  if (!HOST_KEY_TYPES.includes(type))
    return `must start with the key type (${HOST_KEY_TYPES.slice(0, 3).join(", ")}, …), as ssh-keyscan prints it after the address`;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) return "the key after its type is not base64";
  const bytes = Buffer.from(blob, "base64");
  const length = bytes.length >= 4 ? bytes.readUInt32BE(0) : -1;
  // The blob begins with its own type as an SSH string: a key pasted under the wrong type, or cut short, fails here.
  if (length < 0 || bytes.subarray(4, 4 + length).toString("latin1") !== type)
    return `the key's data does not hold a ${type} key (cut short, or pasted under another type?)`;
  return undefined;
}

const hostKey = z.string().superRefine((key, ctx) => {
  const problem = hostKeyProblem(key);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const byoHost = z
  .strictObject({
    name,
    address: z.string().min(1),
    port: z.number().int().min(1).max(65_535).default(22),
    user: z.string().min(1),
    privateKeySecret: secretRef.optional(),
    passwordSecret: secretRef.optional(),
    /**
     * The host's public SSH host key (`ssh-ed25519 AAAA…`): the connection refuses a host that
     * presents any other, before any credential or secret is sent.
     */
    hostKey: hostKey.optional(),
    /**
     * No key given: the first `pulumi up` records the key the host presents (ssh-keyscan) and pins
     * it from then on. Whoever answers at the address at that moment is trusted. @default false
     */
    trustOnFirstUse: z.boolean().default(false),
  })
  .refine((h) => (h.privateKeySecret === undefined) !== (h.passwordSecret === undefined), {
    message: "set exactly one of privateKeySecret and passwordSecret",
  })
  .superRefine((h, ctx) => {
    if (h.hostKey === undefined && !h.trustOnFirstUse)
      ctx.addIssue({
        code: "custom",
        path: ["hostKey"],
        message: `is required: the host's public SSH host key, as \`ssh-keyscan -t ed25519 -p ${h.port} ${h.address}\` prints it after the address (or the host's ssh_host_ed25519_key.pub holds it), so pulumi up sends its secrets to this host and no other; or set trustOnFirstUse: true to record the key the host presents on the first up (docs/deploying.md#host-keys)`,
      });
    if (h.hostKey !== undefined && h.trustOnFirstUse)
      ctx.addIssue({
        code: "custom",
        path: ["trustOnFirstUse"],
        message: "must not be set with hostKey: the key given is the one trusted",
      });
  });

const byoPool = z.strictObject({
  name,
  kind: z.literal("byo"),
  /**
   * `windows`: Windows hosts with OpenSSH Server (PowerShell bootstrap). `posix`: the sandbox
   * template's POSIX twin (Linux with sshd, a sh bootstrap), for trying the BYO path on one
   * machine (`winfleet local byo`). @default "windows"
   */
  platform: z.enum(["windows", "posix"]).default("windows"),
  hosts: z.array(byoHost).min(1),
  labels: nodeLabels,
  /** Register the nodes with the os=windows:NoSchedule taint. @default true */
  registerTaint: z.boolean().default(true),
  /** Values for content commands on these hosts, over `content.variables`. */
  variables: variables.default({}),
  /** Hosts a bootstrap change re-runs on at once. @default the upgrader's maxUnavailable, else 1 */
  maxUnavailable: poolMaxUnavailable.optional(),
  /** How the hosts are drained before a disruptive upgrade step; absent: kubectl drain's defaults. */
  drain: drainSettingsSchema.optional(),
});

/** Sandbox hosts on this machine (`winfleet local up`); the Pulumi program deploys nothing for them. */
const localPool = z.strictObject({
  name,
  kind: z.literal("local"),
  /** How many sandbox hosts. @default 3 */
  hosts: z.number().int().min(1).max(50).default(3),
  /** How many hosts a rollout may take away at once. @default 1 */
  maxUnavailable: z.number().int().min(1).default(1),
  /** The hosts join a throwaway control plane on this machine, as `winfleet local up --cluster` does. @default false */
  cluster: z.boolean().default(false),
  /** How the hosts' nodes are drained before a disruptive step (cluster mode); absent: kubectl drain's defaults. */
  drain: drainSettingsSchema.optional(),
});

/** The rancher-wins-upgrader chart's `winsConfigs[]` entry, accepted as is. */
const winsConfigSchema = z.strictObject({
  name,
  image: z.strictObject({ repository: z.string(), tag: text(z.string()), os: z.string().default("windows") }),
  /** The wins config the group's hosts should run; whiteList is rewritten to white_list. */
  config: z.record(z.string(), z.unknown()).default({}),
  nodeSelector: z.record(z.string(), z.string()).default({}),
  tolerations: z.array(z.record(z.string(), z.unknown())).default([]),
});

const upgraderSchema = z
  .strictObject({
    mode: z.enum(["hostProcess", "wins"]).default("hostProcess"),
    maxUnavailable: z.union([z.number().int().min(1), z.string().regex(/^\d+%$/)]).default(1),
    /** Image that carries the agent (bundle and executable) for the agent upgrader's pods, one DaemonSet per pool. */
    image: z.string().min(1),
    /**
     * The chart's node groups, each with the broker (wins) config its hosts run:
     * the wins upgrader rolls these out. Without any, no wins upgrader is
     * deployed and the broker config stays the content's (winfleet-broker).
     * Their images must carry the winfleet agent (the chart's rancher/wins
     * image does not).
     */
    winsConfigs: z.array(winsConfigSchema).default([]),
    /** The chart's global.cattle.rkeWindowsPathPrefix. */
    pathPrefix: z
      .string()
      .regex(/[\\/]$/, "must end in / or \\")
      .default("c:\\"),
    masquerade: z
      .strictObject({ enabled: z.boolean().default(false), as: z.string().optional() })
      .default({ enabled: false }),
  })
  .refine((u) => !u.masquerade.enabled || u.masquerade.as !== undefined, {
    message: "masquerade.as is required when masquerade.enabled",
    path: ["masquerade", "as"],
  });

const fleetShape = z.strictObject({
  /** Required when any pool is not `local`. */
  cluster: z
    .strictObject({
      name,
      /** The namespace of the stack's cluster side. @default `winfleet-<stack>` (two stacks may share a cluster) */
      namespace: name.optional(),
      join: joinSchema,
      /**
       * The kubeconfig context the cluster side is deployed with (from `KUBECONFIG` or
       * ~/.kube/config), whatever the current context is. Absent, Pulumi follows the current
       * context, and a `pulumi up` from a laptop deploys to whichever cluster that points at;
       * `winfleet preflight` says so.
       */
      kubeContext: z.string().min(1).optional(),
      /**
       * kubeadm clusters whose template has a calico component: Calico for Windows turned on in the cluster's
       * Tigera operator (its Installation and the API server endpoint it reads; see docs/deploying.md), with the
       * cluster's service CIDRs (the kube-apiserver's --service-cluster-ip-range) and the VXLAN adapter (absent:
       * the primary one). One stack per cluster does it: a second stack of the same cluster sets false. Ignored
       * for RKE2, which brings its own CNI.
       */
      calicoWindows: z
        .union([
          z.literal(false),
          z.strictObject({
            serviceCidrs: z
              .array(z.string().regex(/^[0-9a-fA-F.:]+\/[0-9]{1,3}$/, "a CIDR"))
              .min(1)
              .default([DEFAULT_SERVICE_CIDR]),
            vxlanAdapter: text(z.string()).optional(),
          }),
        ])
        .default({ serviceCidrs: [DEFAULT_SERVICE_CIDR] }),
    })
    .optional(),
  content: z.strictObject({
    /** Directory of content sources, built into the bundle at deploy time. @default "content" */
    dir: z.string().default("content"),
    template: name,
    templateVersion: version,
    /** Values for content commands on every node (the template's variables, e.g. KUBE_CLUSTER_DNS). */
    variables: variables.default({}),
    /**
     * Secret values for content commands: variable name → the secure config key
     * holding its value (`KUBE_PROXY_KUBECONFIG: kubeProxyKubeconfig` reads
     * `winfleet:kubeProxyKubeconfig`). They reach nodes only as Pulumi secrets and
     * land in the agent config's `secrets`.
     */
    secrets: z.record(variableName, secretRef).default({}),
    /**
     * The Key Vault (its resource id) Azure nodes read their larger secrets from: every secret
     * variable but the join token (`content.secrets`, and kube-proxy's token on kubeadm clusters),
     * which would not fit the extension's command line. It must use Azure RBAC authorization;
     * winfleet writes one secret per pool and lets only that pool's identity read it.
     */
    keyVault: z
      .string()
      .regex(
        /^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\/Microsoft\.KeyVault\/vaults\/[A-Za-z](?!.*--)[A-Za-z0-9-]{1,22}[A-Za-z0-9]$/i,
        "a Key Vault resource id (/subscriptions/…/resourceGroups/…/providers/Microsoft.KeyVault/vaults/<name>)",
      )
      .optional(),
    /** Where the bundle is published: a ConfigMap (small bundles) or Azure Blob Storage. */
    publish: z
      .discriminatedUnion("to", [
        z.strictObject({ to: z.literal("configMap") }),
        z.strictObject({
          to: z.literal("blob"),
          resourceGroup: z.string().min(1),
          storageAccount: z
            .string()
            .regex(/^[a-z0-9]{3,24}$/, "3-24 lower-case letters and digits (an Azure storage account name)"),
          container: z
            .string()
            .regex(/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/, "an Azure blob container name")
            .default("winfleet"),
          /**
           * How nodes read the bundle: their pool's managed identity, or a read-only SAS passed as a protected setting.
           * @default "managedIdentity"
           */
          auth: z.enum(["managedIdentity", "sas"]).default("managedIdentity"),
          /** When the SAS expires (ISO 8601), required with `auth: sas`. */
          sasExpiry: z.iso.datetime().optional(),
          /**
           * The storage account's subscription. Needed only when no Azure pool or Key Vault names
           * the stack's subscription: a stack deploys all its Azure resources to one subscription.
           */
          subscriptionId: subscriptionId.optional(),
        }),
      ])
      .default({ to: "configMap" }),
  }),
  /** Required when any pool is not `local`. */
  agent: z
    .strictObject({
      version,
      /**
       * The agent bundle (a .tgz); its SHA-256 is checked by the bootstrap.
       * Azure nodes that read content with their managed identity read it with
       * that identity when it is on the same storage account; anywhere else it
       * must be downloadable without credentials.
       */
      bundle: z.strictObject({ url: z.string().url(), sha256 }),
      /** Node.js runtime for Windows; defaults to a pinned, measured release (see components/node-runtime.ts). */
      node: z.strictObject({ url: z.string().url(), sha256 }).optional(),
      /**
       * The ed25519 public key (PEM, from `winfleet keys generate`) nodes pin in
       * their agent config: they then refuse content and agent bundles not signed
       * with it (`winfleet release`). Absent, unsigned bundles are accepted.
       */
      publicKey: ed25519PublicKey.optional(),
    })
    .optional(),
  pools: z.array(z.discriminatedUnion("kind", [azurePool, byoPool, localPool])).min(1),
  upgrader: upgraderSchema.optional(),
  /**
   * An internal mirror every node download goes through (air-gapped fleets): the Node runtime, NSSM and every
   * artifact of the content are fetched from `<url>/<host>/<path>` of their pinned URLs, their digests checked all the
   * same. The agent and content bundles come from where `agent.bundle` and `content.publish` say.
   */
  mirror: z.strictObject({ url: z.url({ protocol: /^https$/, message: "an https:// URL" }) }).optional(),
});

/** The whole `winfleet:fleet` value. */
export const fleetSchema = fleetShape.superRefine((f, ctx) => {
  const seen = new Set<string>();
  f.pools.forEach((p, i) => {
    if (seen.has(p.name))
      ctx.addIssue({ code: "custom", path: ["pools", i, "name"], message: `duplicates pool ${p.name}` });
    seen.add(p.name);
  });
  const publish = f.content.publish;
  if (publish.to === "blob" && publish.auth === "sas" && !publish.sasExpiry) {
    ctx.addIssue({
      code: "custom",
      path: ["content", "publish", "sasExpiry"],
      message: "is required with auth: sas (an ISO 8601 time, e.g. 2027-01-01T00:00:00Z)",
    });
  }
  f.pools.forEach((p, i) => {
    if (p.kind === "azure" && f.content.publish.to !== "blob") {
      ctx.addIssue({
        code: "custom",
        path: ["content", "publish"],
        message: `must be { to: blob, … }: pools[${i}] (azure) fetches its content before it joins the cluster, so a ConfigMap cannot reach it`,
      });
    }
    if (p.kind === "byo" && f.upgrader && publish.to === "blob" && publish.auth === "managedIdentity") {
      ctx.addIssue({
        code: "custom",
        path: ["content", "publish", "auth"],
        message: `must be sas (or publish to a configMap): pools[${i}] (byo) has no Azure managed identity to read content upgrades with`,
      });
    }
  });
  const azure = f.pools.findIndex((p) => p.kind === "azure");
  const larger = [
    ...(f.cluster?.join.method === "kubeadm" ? ["KUBE_PROXY_TOKEN", "CALICO_TOKEN"] : []),
    ...Object.keys(f.content.secrets),
  ];
  if (azure >= 0 && !f.content.keyVault && larger.length > 0) {
    ctx.addIssue({
      code: "custom",
      path: ["content", "keyVault"],
      message: `is required: pools[${azure}] (azure) reads ${larger.join(", ")} from a Key Vault secret (the extension's command line has room for the join token alone)`,
    });
  }
  reservedVariables(f, ctx);
  agentBundleReadable(f, ctx);
  oneSubscription(f, ctx);
  const cloud = f.pools.findIndex((p) => p.kind !== "local");
  if (cloud >= 0) {
    const why = `is required: pools[${cloud}] (${f.pools[cloud]?.kind ?? ""}) deploys real nodes`;
    if (!f.cluster) ctx.addIssue({ code: "custom", path: ["cluster"], message: why });
    if (!f.agent) ctx.addIssue({ code: "custom", path: ["agent"], message: why });
  } else if (f.cluster && !f.agent) {
    ctx.addIssue({
      code: "custom",
      path: ["agent"],
      message: "is required with cluster: the upgraders on the cluster's nodes carry the agent's version",
    });
  }
});

/**
 * Nodes download the agent bundle before anything else: with their pool's
 * managed identity when it is on the storage account they read content from
 * (the identity's role covers the account), otherwise without credentials.
 * A content SAS is scoped to the content blob and BYO hosts have no identity,
 * so for them a bundle on that (private) account could never be read.
 */
function agentBundleReadable(f: z.infer<typeof fleetShape>, ctx: z.RefinementCtx): void {
  const publish = f.content.publish;
  if (!f.agent || publish.to !== "blob") return;
  let host: string;
  try {
    host = new URL(f.agent.bundle.url).hostname.toLowerCase();
  } catch {
    return;
  }
  if (!host.startsWith(`${publish.storageAccount}.blob.`)) return;
  const why =
    publish.auth === "sas"
      ? "nodes read that account with a SAS scoped to the content blob alone"
      : (() => {
          const byo = f.pools.findIndex((p) => p.kind === "byo");
          return byo >= 0 ? `pools[${byo}] (byo) has no managed identity to read it with` : undefined;
        })();
  if (why === undefined) return;
  ctx.addIssue({
    code: "custom",
    path: ["agent", "bundle", "url"],
    message: `is on the content storage account ${publish.storageAccount}, and ${why}: publish the bundle where nodes can download it without credentials (a release page, or a container with anonymous read access on another account)${publish.auth === "sas" ? ", or read content with auth: managedIdentity" : ""}`,
  });
}

/** Names in `variables`/`secrets` that winfleet sets itself, or that are set twice. */
function reservedVariables(f: z.infer<typeof fleetShape>, ctx: z.RefinementCtx): void {
  const reserved = (names: string[], path: (string | number)[]): void => {
    for (const n of names) {
      if (n in JOIN_VARIABLES)
        ctx.addIssue({
          code: "custom",
          path: [...path, n],
          message: `is set by winfleet from ${JOIN_VARIABLES[n as keyof typeof JOIN_VARIABLES]}; remove it here`,
        });
    }
  };
  reserved(Object.keys(f.content.variables), ["content", "variables"]);
  reserved(Object.keys(f.content.secrets), ["content", "secrets"]);
  f.pools.forEach((p, i) => {
    if (p.kind === "local") return;
    reserved(Object.keys(p.variables), ["pools", i, "variables"]);
    for (const n of Object.keys(p.variables)) {
      if (n in f.content.secrets)
        ctx.addIssue({
          code: "custom",
          path: ["pools", i, "variables", n],
          message: "is a secret in content.secrets; a plain value may not replace it",
        });
    }
  });
  for (const n of Object.keys(f.content.variables)) {
    if (n in f.content.secrets)
      ctx.addIssue({
        code: "custom",
        path: ["content", "variables", n],
        message: "is also in content.secrets; give it in one place",
      });
  }
}

/** A parsed fleet config. */
export type FleetConfig = z.infer<typeof fleetSchema>;
/** One parsed pool. */
export type PoolConfig = FleetConfig["pools"][number];

/** Parses the fleet value; errors carry `winfleet:fleet.<path>`. */
export function parseFleetConfig(value: unknown): FleetConfig {
  const parsed = fleetSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = zodIssues(parsed.error).map((i) => ({ ...i, path: `winfleet:fleet${i.path ? `.${i.path}` : ""}` }));
  throw new ValidationError("stack config", issues);
}

/** Every secure key a fleet config names, with where it is named. */
export function secretKeys(f: FleetConfig): string[] {
  const keys = new Set<string>([
    ...(f.cluster ? [f.cluster.join.tokenSecret] : []),
    ...Object.values(f.content.secrets),
  ]);
  for (const p of f.pools) {
    if (p.kind === "azure") keys.add(p.adminPasswordSecret);
    else if (p.kind === "byo") for (const h of p.hosts) keys.add(h.privateKeySecret ?? h.passwordSecret ?? "");
  }
  return [...keys].filter((k) => k !== "").sort();
}
