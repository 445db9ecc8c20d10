/**
 * The kubelet's own rules for its configuration file, ported from Kubernetes
 * 1.34 (pkg/kubelet/apis/config/validation: validation.go, and
 * validation_windows.go, where cgroupsPerQOS and enforcements other than
 * "none" only warn, and singleProcessOOMKill and userNamespaces are refused),
 * applied after v1beta1 defaulting as the kubelet applies them. A
 * KubeletConfiguration these rules refuse makes the kubelet exit at start, on
 * every start. The full check is the kubelet's own code
 * (scripts/engines/kubernetes/cmd/kubelet-config-validate); this port is what
 * runs without it, so the rules a generated Windows configuration can break
 * are caught everywhere.
 */
import type { PsValue } from "./powershell-literal";

type Config = { readonly [key: string]: PsValue };

const API_VERSION = "kubelet.config.k8s.io/v1beta1";
const ENFORCEMENTS = [
  "pods",
  "system-reserved",
  "system-reserved-compressible",
  "kube-reserved",
  "kube-reserved-compressible",
  "none",
];
const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether `v` stands for a value only known on the host (a `$name` placeholder). */
const unknown = (v: PsValue | undefined): boolean => typeof v === "string" && v.startsWith("$");

/** Kubernetes' qualified-name rule (label and taint keys): `[prefix/]name`. */
export function qualifiedNameProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return "has more than one '/'";
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]];
  if (name === undefined || name === "" || name.length > 63 || !NAME.test(name))
    return "its name part must be 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric";
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return "its prefix must be a DNS subdomain";
  return undefined;
}

/** Kubernetes' label-value rule (also taint values). */
export function labelValueProblem(value: string): string | undefined {
  return value === "" || (value.length <= 63 && NAME.test(value))
    ? undefined
    : "must be empty or 1-63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric";
}

const asArray = (v: PsValue | undefined): readonly PsValue[] | undefined =>
  Array.isArray(v) ? (v as readonly PsValue[]) : undefined;

function range(out: string[], c: Config, field: string, min: number, max: number, allowZero = false): void {
  const v = c[field];
  if (typeof v !== "number") return;
  if (allowZero && v === 0) return;
  if (v < min || v > max) out.push(`${field} ${v} must be between ${min} and ${max}, inclusive`);
}

/**
 * Why the kubelet would refuse `config` (a KubeletConfiguration as written to
 * its file, before defaulting), each message naming the field; empty when the
 * rules ported here accept it. Values that stand for host-only values
 * (`$name`) are not judged.
 */
export function kubeletConfigurationProblems(config: Config): string[] {
  const out: string[] = [];
  if (config.kind !== "KubeletConfiguration")
    out.push(`kind must be KubeletConfiguration, not ${JSON.stringify(config.kind)}`);
  if (config.apiVersion !== API_VERSION)
    out.push(`apiVersion must be ${API_VERSION}, not ${JSON.stringify(config.apiVersion)}`);
  // v1beta1 defaulting: cgroupsPerQOS defaults to true, and enforceNodeAllocatable to ["pods"]
  // only when it is absent or null: an empty list stays empty.
  const cgroupsPerQOS = config.cgroupsPerQOS ?? true;
  const absent = config.enforceNodeAllocatable === undefined || config.enforceNodeAllocatable === null;
  const enforce = absent ? ["pods"] : asArray(config.enforceNodeAllocatable);
  if (enforce === undefined && !unknown(config.enforceNodeAllocatable))
    out.push("enforceNodeAllocatable must be a list");
  const given = (enforce ?? []).filter((v) => !unknown(v));
  if (given.includes("system-reserved") && given.includes("system-reserved-compressible"))
    out.push('enforceNodeAllocatable may not hold both "system-reserved" and "system-reserved-compressible"');
  if (given.includes("kube-reserved") && given.includes("kube-reserved-compressible"))
    out.push('enforceNodeAllocatable may not hold both "kube-reserved" and "kube-reserved-compressible"');
  const seen = new Set<PsValue>();
  for (const value of given) {
    if (seen.has(value)) {
      out.push(`enforceNodeAllocatable holds ${JSON.stringify(value)} twice`);
      continue;
    }
    seen.add(value);
    if (typeof value !== "string" || !ENFORCEMENTS.includes(value)) {
      out.push(`enforceNodeAllocatable: option ${JSON.stringify(value)} is not one of ${ENFORCEMENTS.join(", ")}`);
      continue;
    }
    // "none" alone is the one entry the kubelet takes without QoS cgroups.
    if (value === "none") {
      if (given.length > 1) out.push('enforceNodeAllocatable may not contain other enforcements when "none" is given');
      continue;
    }
    if (value.startsWith("system-reserved") && !config.systemReservedCgroup)
      out.push(`systemReservedCgroup must be set when enforceNodeAllocatable contains ${JSON.stringify(value)}`);
    if (value.startsWith("kube-reserved") && !config.kubeReservedCgroup)
      out.push(`kubeReservedCgroup must be set when enforceNodeAllocatable contains ${JSON.stringify(value)}`);
    if (cgroupsPerQOS === false) {
      out.push(
        `enforceNodeAllocatable contains ${JSON.stringify(value)}${absent ? ' (an absent enforceNodeAllocatable defaults to ["pods"])' : ""}, which needs cgroupsPerQOS true, and it is false: write enforceNodeAllocatable: [] (or ["none"])`,
      );
    }
  }
  // validation_windows.go: refused outright on Windows.
  if (config.singleProcessOOMKill !== undefined && config.singleProcessOOMKill !== null)
    out.push("singleProcessOOMKill is not supported on Windows");
  if (config.userNamespaces !== undefined && config.userNamespaces !== null)
    out.push("userNamespaces is not supported on Windows");
  if (config.systemCgroups && !config.cgroupRoot) out.push("systemCgroups is set but cgroupRoot is not");
  range(out, config, "port", 1, 65535);
  range(out, config, "healthzPort", 1, 65535, true);
  range(out, config, "readOnlyPort", 1, 65535, true);
  range(out, config, "imageGCHighThresholdPercent", 0, 100);
  range(out, config, "imageGCLowThresholdPercent", 0, 100);
  const high = typeof config.imageGCHighThresholdPercent === "number" ? config.imageGCHighThresholdPercent : 85;
  const low = typeof config.imageGCLowThresholdPercent === "number" ? config.imageGCLowThresholdPercent : 80;
  if (low >= high) out.push(`imageGCLowThresholdPercent ${low} must be less than imageGCHighThresholdPercent ${high}`);
  for (const field of [
    "maxPods",
    "podsPerCore",
    "maxOpenFiles",
    "kubeAPIQPS",
    "kubeAPIBurst",
    "eventRecordQPS",
    "eventBurst",
    "registryPullQPS",
    "registryBurst",
  ]) {
    const v = config[field];
    if (typeof v === "number" && v < 0) out.push(`${field} ${v} must not be negative`);
  }
  if (typeof config.nodeLeaseDurationSeconds === "number" && config.nodeLeaseDurationSeconds <= 0)
    out.push("nodeLeaseDurationSeconds must be greater than 0");
  if (typeof config.maxParallelImagePulls === "number" && config.maxParallelImagePulls < 1)
    out.push("maxParallelImagePulls must be a positive number");
  if (
    (config.serializeImagePulls ?? true) === true &&
    typeof config.maxParallelImagePulls === "number" &&
    config.maxParallelImagePulls > 1
  )
    out.push("maxParallelImagePulls cannot be larger than 1 unless serializeImagePulls is false");
  const taints = config.registerWithTaints;
  if (taints !== undefined && taints !== null && !unknown(taints)) {
    const list = asArray(taints);
    if (list === undefined) out.push("registerWithTaints must be a list");
    (list ?? []).forEach((t, i) => {
      if (unknown(t)) return;
      if (typeof t !== "object" || t === null || Array.isArray(t)) {
        out.push(`registerWithTaints[${i}] must be an object`);
        return;
      }
      const taint = t as Config;
      const key = typeof taint.key === "string" ? taint.key : "";
      const keyProblem = qualifiedNameProblem(key);
      if (keyProblem) out.push(`registerWithTaints[${i}].key ${JSON.stringify(key)}: ${keyProblem}`);
      if (typeof taint.value === "string" && labelValueProblem(taint.value))
        out.push(
          `registerWithTaints[${i}].value ${JSON.stringify(taint.value)} ${labelValueProblem(taint.value) ?? ""}`,
        );
      if (typeof taint.effect !== "string" || !TAINT_EFFECTS.includes(taint.effect))
        out.push(
          `registerWithTaints[${i}].effect ${JSON.stringify(taint.effect)} must be one of ${TAINT_EFFECTS.join(", ")}`,
        );
      if (taint.timeAdded !== undefined) out.push(`registerWithTaints[${i}].timeAdded must not be set`);
    });
  }
  return out;
}

/**
 * The kubelet refuses `--node-labels` keys in the kubernetes.io and k8s.io
 * namespaces except these (kubelet's node-labels allowlist); a node that
 * passes any other makes the kubelet exit at start.
 */
export const KUBELET_LABEL_KEYS: ReadonlySet<string> = new Set([
  "beta.kubernetes.io/arch",
  "beta.kubernetes.io/instance-type",
  "beta.kubernetes.io/os",
  "failure-domain.beta.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "kubernetes.io/arch",
  "kubernetes.io/hostname",
  "kubernetes.io/os",
  "node.kubernetes.io/instance-type",
  "topology.kubernetes.io/region",
  "topology.kubernetes.io/zone",
]);
const KUBELET_LABEL_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];

/** Why the kubelet would refuse `--node-labels=<labels>` (comma-separated key=value); empty when it accepts them. */
export function nodeLabelProblems(labels: string): string[] {
  if (labels === "") return [];
  const out: string[] = [];
  for (const pair of labels.split(",")) {
    const eq = pair.indexOf("=");
    if (eq < 0) {
      out.push(`${JSON.stringify(pair)} is not key=value`);
      continue;
    }
    const key = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) out.push(`label key ${JSON.stringify(key)}: ${keyProblem}`);
    const valueProblem = labelValueProblem(value);
    if (valueProblem) out.push(`label ${JSON.stringify(key)} value ${JSON.stringify(value)} ${valueProblem}`);
    const prefix = key.includes("/") ? (key.split("/")[0] ?? "") : "";
    const reserved =
      prefix === "kubernetes.io" ||
      prefix === "k8s.io" ||
      prefix.endsWith(".kubernetes.io") ||
      prefix.endsWith(".k8s.io");
    const allowed =
      KUBELET_LABEL_KEYS.has(key) || KUBELET_LABEL_NAMESPACES.some((ns) => prefix === ns || prefix.endsWith(`.${ns}`));
    if (reserved && !allowed)
      out.push(
        `label ${JSON.stringify(key)} is in the kubernetes.io/k8s.io namespace, which the kubelet may not set (allowed: ${[...KUBELET_LABEL_NAMESPACES].map((n) => `${n}/*`).join(", ")} and the well-known topology, os, arch and instance-type labels)`,
      );
  }
  return out;
}
