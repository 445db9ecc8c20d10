/**
 * winfleet's policy rules (`@pulumi/policy`), mandatory: bootstrap secrets only
 * in an extension's `protectedSettings`; upgrader DaemonSets with a bounded
 * `maxUnavailable`; every Windows pool pinned to a template, template version
 * and agent version; no public IP on a Windows node unless the pack's config
 * allows its pool; a bootstrap token that expires, at least an hour on. Kept
 * apart from the pack (index.ts), whose constructor starts the analyzer the
 * Pulumi CLI talks to, so the rules can be run on any list of resources:
 * {@link runPolicies}.
 */
import type { ReportViolation, ResourceValidationArgs, ResourceValidationPolicy } from "@pulumi/policy";

type Props = Record<string, unknown>;
const obj = (v: unknown): Props => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Props) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

const EXTENSIONS = new Set([
  "azure-native:compute:VirtualMachineScaleSetExtension",
  "azure-native:compute:VirtualMachineExtension",
]);
const POOL_MACHINES = new Set(["azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"]);
// Settings a CustomScriptExtension logs and returns in plain text; anything that can carry a secret must not be there.
const SENSITIVE_SETTING =
  /^(commandToExecute|script|storageAccountKey|storageAccountName|managedIdentity)$|token|secret|password|sas|key/i;

// The CustomScriptExtensions a resource declares, with where: an extension resource, or those in a scale set's model.
function customScriptExtensions(type: string, props: Props): { at: string; ext: Props }[] {
  if (EXTENSIONS.has(type)) return props.type === "CustomScriptExtension" ? [{ at: "", ext: props }] : [];
  if (type !== "azure-native:compute:VirtualMachineScaleSet") return [];
  return arr(obj(obj(props.virtualMachineProfile).extensionProfile).extensions)
    .map((e, i) => ({ at: `virtualMachineProfile.extensionProfile.extensions[${i}].`, ext: obj(e) }))
    .filter(({ ext }) => ext.type === "CustomScriptExtension");
}

/**
 * CustomScriptExtension secrets (the command, its token, storage credentials) only in `protectedSettings`, in extension
 * resources and in scale set models alike.
 */
export const extensionSecretsProtected: ResourceValidationPolicy = {
  name: "winfleet-extension-secrets-protected",
  description:
    "A CustomScriptExtension keeps its command and every credential in protectedSettings: settings are stored and shown in plain text.",
  enforcementLevel: "mandatory",
  validateResource: (args, report) => {
    for (const { at, ext } of customScriptExtensions(args.type, args.props)) {
      const settings = obj(ext.settings);
      for (const key of Object.keys(settings)) {
        if (SENSITIVE_SETTING.test(key))
          report(`${at}settings.${key} is stored in plain text: move it to protectedSettings`);
      }
      for (const uri of arr(settings.fileUris))
        if (typeof uri === "string" && /[?&]sig=/.test(uri))
          report(`${at}settings.fileUris carries a SAS signature: move the URIs to protectedSettings`);
      if (!("commandToExecute" in obj(ext.protectedSettings)))
        report(
          `${at}protectedSettings.commandToExecute is missing: the bootstrap command (and the token it passes) belongs there`,
        );
    }
  },
};

/** How far ahead a bootstrap token's expiry must be when it is declared: a node must still be able to use it. */
export const TOKEN_EXPIRY_MARGIN_MS = 3_600_000;

/**
 * A bootstrap token that never expires lets whoever reads it register a node
 * for ever (kubeadm's own tokens last 24 hours); one that expires within the
 * hour, or has, is one the cluster deletes while the stack declares it, and
 * every run recreates. The program rotates its tokens each `tokenLifetime`;
 * this holds any other bootstrap token the stack declares to the same.
 */
export const bootstrapTokenExpires: ResourceValidationPolicy = {
  name: "winfleet-bootstrap-token-expires",
  description:
    "A bootstrap token Secret sets an expiration at least an hour ahead (winfleet's rotate each cluster.join.tokenLifetime), so a leaked token stops working.",
  enforcementLevel: "mandatory",
  validateResource: (args, report) => {
    if (args.type !== "kubernetes:core/v1:Secret" || args.props.type !== "bootstrap.kubernetes.io/token") return;
    // The provider's check moves stringData into data, base64-encoded as the API has it: that is what a preview sees.
    const encoded = Object.fromEntries(
      Object.entries(obj(args.props.data)).map(([k, v]) => [
        k,
        typeof v === "string" ? Buffer.from(v, "base64").toString("utf8") : v,
      ]),
    );
    const data = { ...encoded, ...obj(args.props.stringData) };
    const name = obj(args.props.metadata).name;
    const token = typeof name === "string" ? name : "the token";
    if (data.expiration === undefined) {
      report(
        `${token} never expires: give it an expiration (winfleet's tokens expire each cluster.join.tokenLifetime)`,
      );
      return;
    }
    const expiration = typeof data.expiration === "string" ? data.expiration : JSON.stringify(data.expiration);
    const at = typeof data.expiration === "string" ? Date.parse(data.expiration) : Number.NaN;
    if (Number.isNaN(at)) report(`${token}: expiration ${expiration} is not a time (RFC 3339)`);
    else if (at < Date.now() + TOKEN_EXPIRY_MARGIN_MS)
      report(`${token} expires at ${expiration}, within the hour or before now: no node could still join with it`);
  },
};

/** Whether a `maxUnavailable` keeps a rollout from taking every node at once. */
export function boundedMaxUnavailable(v: unknown): boolean {
  if (typeof v === "number") return Number.isInteger(v) && v >= 1;
  if (typeof v === "string") {
    const m = /^(\d+)%$/.exec(v);
    return m !== null && Number(m[1]) >= 1 && Number(m[1]) <= 50;
  }
  return false;
}

/** Upgrader DaemonSets roll with a set, bounded `maxUnavailable` (an integer ≥ 1, or 1–50%). */
export const upgraderMaxUnavailable: ResourceValidationPolicy = {
  name: "winfleet-upgrader-bounded-rollout",
  description:
    "winfleet upgrader DaemonSets set maxUnavailable to an integer of at least 1 or a percentage of at most 50%, so a bad version cannot take every node down at once.",
  enforcementLevel: "mandatory",
  validateResource: (args, report) => {
    if (args.type !== "kubernetes:apps/v1:DaemonSet") return;
    if (obj(obj(args.props.metadata).labels)["app.kubernetes.io/name"] !== "winfleet-upgrader") return;
    const strategy = obj(obj(args.props.spec).updateStrategy);
    if (strategy.type !== "RollingUpdate")
      report(
        `spec.updateStrategy.type is ${JSON.stringify(strategy.type) ?? "unset"}: upgraders roll with RollingUpdate`,
      );
    const max = obj(strategy.rollingUpdate).maxUnavailable;
    if (!boundedMaxUnavailable(max))
      report(
        `spec.updateStrategy.rollingUpdate.maxUnavailable is ${JSON.stringify(max) ?? "unset"}: set an integer >= 1 or a percentage <= 50%`,
      );
  },
};

const PIN_TAGS = ["winfleet-template", "winfleet-template-version", "winfleet-agent-version"] as const;

/** Every Windows pool's machines carry the template, template version and agent version they run. */
export const poolPinned: ResourceValidationPolicy = {
  name: "winfleet-pool-pinned",
  description:
    "Every winfleet Windows pool is pinned to a template, a template version and an agent version (its machines' tags), so what runs is what Git says.",
  enforcementLevel: "mandatory",
  validateResource: (args, report) => {
    if (!POOL_MACHINES.has(args.type)) return;
    const tags = obj(args.props.tags);
    if (tags["winfleet-pool"] === undefined) return;
    for (const t of PIN_TAGS) {
      const v = tags[t];
      if (typeof v !== "string" || v === "" || v === "latest")
        report(`tag ${t} is ${JSON.stringify(v) ?? "missing"}: pin the pool to an exact version`);
    }
  },
};

/** Configuration of {@link noPublicIp}. */
export interface NoPublicIpConfig {
  /** Pools whose nodes may have a public IP. */
  readonly allowedPools?: readonly string[];
}

function publicIpPaths(type: string, props: Props): string[] {
  const out: string[] = [];
  if (type === "azure-native:compute:VirtualMachineScaleSet") {
    arr(obj(obj(props.virtualMachineProfile).networkProfile).networkInterfaceConfigurations).forEach((nic, i) =>
      arr(obj(nic).ipConfigurations).forEach((ip, j) => {
        if (obj(ip).publicIPAddressConfiguration !== undefined)
          out.push(
            `virtualMachineProfile.networkProfile.networkInterfaceConfigurations[${i}].ipConfigurations[${j}].publicIPAddressConfiguration`,
          );
      }),
    );
  }
  if (type === "azure-native:network:NetworkInterface") {
    arr(props.ipConfigurations).forEach((ip, j) => {
      if (obj(ip).publicIPAddress !== undefined) out.push(`ipConfigurations[${j}].publicIPAddress`);
    });
  }
  if (type === "azure-native:network:PublicIPAddress") out.push("(the address itself)");
  return out;
}

/** No public IP on a Windows node unless the pack's config allows its pool. */
export const noPublicIp: ResourceValidationPolicy = {
  name: "winfleet-no-public-ip",
  description: "Windows nodes get no public IP address unless the policy config lists their pool in allowedPools.",
  enforcementLevel: "mandatory",
  configSchema: { properties: { allowedPools: { type: "array", items: { type: "string" } } } },
  validateResource: (args, report) => {
    const pool = obj(args.props.tags)["winfleet-pool"];
    if (typeof pool !== "string") return;
    const allowed = args.getConfig<NoPublicIpConfig>().allowedPools ?? [];
    if (allowed.includes(pool)) return;
    for (const path of publicIpPaths(args.type, args.props))
      report(`${path}: pool ${pool} may not have public IPs (allow it with allowedPools in the policy config)`);
  },
};

/** Every rule of the pack. */
export const POLICIES: readonly ResourceValidationPolicy[] = [
  extensionSecretsProtected,
  upgraderMaxUnavailable,
  poolPinned,
  noPublicIp,
  bootstrapTokenExpires,
];

/** A resource as a policy sees it. */
export interface PolicyResource {
  readonly type: string;
  readonly name: string;
  readonly props: Record<string, unknown>;
}

/** A violation: which policy, which resource, what, and whether it stops a deployment. */
export interface Violation {
  readonly policy: string;
  readonly enforcementLevel: "advisory" | "mandatory";
  readonly resource: string;
  readonly message: string;
}

/** Runs every rule over `resources` (as `winfleet render` or a test collects them), with per-policy config. */
export async function runPolicies(
  resources: readonly PolicyResource[],
  config: Readonly<Record<string, unknown>> = {},
): Promise<Violation[]> {
  const out: Violation[] = [];
  for (const policy of POLICIES) {
    const validations = [policy.validateResource ?? []].flat();
    for (const r of resources) {
      const level = policy.enforcementLevel === "advisory" ? "advisory" : "mandatory";
      const report: ReportViolation = (message) =>
        void out.push({ policy: policy.name, enforcementLevel: level, resource: `${r.type} ${r.name}`, message });
      // The subset of ResourceValidationArgs the rules read; the rest only exists inside the Pulumi engine.
      const args = {
        type: r.type,
        name: r.name,
        props: r.props,
        urn: `urn:pulumi:test::winfleet::${r.type}::${r.name}`,
        getConfig: <T>() => (config[policy.name] ?? {}) as T,
      } as unknown as ResourceValidationArgs;
      for (const v of validations) await v(args, report);
    }
  }
  return out;
}
