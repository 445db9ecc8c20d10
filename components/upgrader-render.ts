/**
 * The upgrader DaemonSets, rendered as plain Kubernetes objects (pure and
 * deterministic). One DaemonSet per node group, its selector unique to the
 * group (the rancher-wins-upgrader chart shared one selector across groups).
 * The pod template carries a hash of exactly the versions and config it rolls
 * out, so it changes — and Kubernetes rolls the group node by node — when and
 * only when one of those changes. Unlike the chart's pods, which sleep forever
 * whatever happened, a pod turns Ready only when its host's agent reports the
 * target applied (`winfleet-agent ready`), so `maxUnavailable` gates the
 * rollout on real convergence and a failing host halts it.
 */
import { createHash } from "node:crypto";
import { type DrainSettings, canonicalJson } from "../agent/common";
import type { KubeObject } from "./kube-objects";
import { renderSandboxUpgrader } from "./sandbox-upgrader-render";
import {
  HOST_AGENT,
  HOST_NODE,
  IMAGE_AGENT,
  POD_CONFIG_DIR,
  POD_HOST_DIR,
  SAS_ENV,
  hostProcessAgentScript,
  hostProcessWinsScript,
  winsModeScript,
} from "./upgrader-scripts";

/** What an upgrader rolls out: the agent and its content, or the broker's (wins) config. */
export type UpgraderKind = "agent" | "wins";

/** One node group: the chart's `winsConfigs[]` entry, or one per pool. */
export interface UpgraderGroup {
  readonly name: string;
  readonly image: string;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Readonly<Record<string, unknown>>[];
  /** The wins-compatible config the group's hosts run (already key-fixed). */
  readonly config: Readonly<Record<string, unknown>>;
  /** The group's hosts are the local fleet's sandbox hosts (POSIX commands; see sandbox-upgrader-render.ts). */
  readonly sandbox?: boolean;
  /** The pool's drain knobs, handed to its hosts with each target (absent: the agent's defaults, kubectl drain's). */
  readonly drain?: DrainSettings;
}

/** Where an agent upgrader takes its host. */
export interface AgentTarget {
  readonly template: string;
  readonly templateVersion: string;
  readonly agentVersion: string;
  readonly contentSha256: string;
  /** A blob URL to download the content archive from, or a ConfigMap holding it as `bundle.tgz`. */
  readonly content:
    { readonly url: string; readonly auth: "none" | "managedIdentity" | "sas" } | { readonly configMap: string };
}

/** Inputs of {@link renderUpgrader}. */
export interface UpgraderRenderArgs {
  readonly kind: UpgraderKind;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly group: UpgraderGroup;
  readonly mode: "hostProcess" | "wins";
  readonly maxUnavailable: number | string;
  /** Versions rolled out: agent, content template… (what the rollout hash covers). */
  readonly versions: Readonly<Record<string, string>>;
  /** The chart's rkeWindowsPathPrefix, ending in `\` or `/`. */
  readonly pathPrefix: string;
  /** Deliver the upgrader under an already-whitelisted path (the chart's masquerade). */
  readonly masqueradeAs?: string;
  /** For the agent kind: the target the readiness probe waits for. */
  readonly target?: AgentTarget;
}

/** The objects for one group: its ConfigMap and DaemonSet. */
export interface RenderedUpgrader {
  readonly configMap: KubeObject;
  readonly daemonSet: KubeObject;
}

const WIN_OS = { "kubernetes.io/os": "windows" };
/** The Secret (key `sas`) holding a content SAS, when blobs are read with one. */
export const CONTENT_SAS_SECRET = "winfleet-content-sas";

/**
 * Rewrites a chart-era wins config so wins ≥ 0.1.2 and winfleet read its whitelist: `white_list` with camelCase keys.
 */
export function fixWinsConfig(config: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const nested: Record<string, string> = {
    process_paths: "processPaths",
    processpaths: "processPaths",
    proxy_ports: "proxyPorts",
    proxyports: "proxyPorts",
  };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    if (k.toLowerCase() === "whitelist" || k.toLowerCase() === "white_list") {
      const list = (v ?? {}) as Record<string, unknown>;
      out.white_list = Object.fromEntries(Object.entries(list).map(([nk, nv]) => [nested[nk.toLowerCase()] ?? nk, nv]));
    } else {
      out[k] = v;
    }
  }
  return out;
}

/** Windows path under the prefix, backslashed. */
export function prefixed(prefix: string, rel: string): string {
  return `${prefix.replace(/\//g, "\\").replace(/\\?$/, "\\")}${rel.replace(/\//g, "\\")}`;
}

/** The broker config text a group's hosts receive (and its digest, what `ready` checks). */
export function brokerConfigText(group: UpgraderGroup): { text: string; sha256: string } {
  const text = `${canonicalJson(fixWinsConfig(group.config))}\n`;
  return { text, sha256: createHash("sha256").update(text).digest("hex") };
}

/** The hash that decides whether the pod template changes. */
export function rolloutHash(
  args: Pick<UpgraderRenderArgs, "versions" | "group" | "mode" | "masqueradeAs" | "target">,
): string {
  return createHash("sha256")
    .update(
      canonicalJson({
        versions: args.versions,
        config: args.group.config,
        image: args.group.image,
        mode: args.mode,
        masquerade: args.masqueradeAs ?? null,
        target: args.target ?? null,
        // Only when set, so pools that leave the drain alone keep the hash they had.
        ...(args.group.drain ? { drain: args.group.drain } : {}),
      }),
    )
    .digest("hex")
    .slice(0, 32);
}

/** The command the readiness probe runs. */
function probeCommand(args: UpgraderRenderArgs, sha256: string): string[] {
  const wants =
    args.kind === "agent" && args.target
      ? [
          "--template",
          args.target.template,
          "--template-version",
          args.target.templateVersion,
          "--agent-version",
          args.target.agentVersion,
        ]
      : ["--broker-config-sha256", sha256];
  return args.mode === "hostProcess"
    ? [HOST_NODE, HOST_AGENT, "ready", ...wants]
    : [IMAGE_AGENT, "ready", "--server", "rancher_wins", ...wants];
}

/** Renders one group's upgrader. */
export function renderUpgrader(args: UpgraderRenderArgs): RenderedUpgrader {
  const name = `winfleet-${args.kind}-upgrader-${args.group.name}`;
  if (args.group.sandbox && args.target)
    return renderSandboxUpgrader({ ...args, target: args.target }, name, rolloutHash(args));
  const labels = {
    "app.kubernetes.io/name": "winfleet-upgrader",
    "app.kubernetes.io/component": args.kind,
    "winfleet.io/upgrader-group": args.group.name,
  };
  const configFile = prefixed(args.pathPrefix, "etc\\rancher\\wins\\config");
  const upgradeExe = (
    args.masqueradeAs ?? prefixed(args.pathPrefix, "etc\\rancher\\wins\\winfleet-upgrade.exe")
  ).replace(/\//g, "\\");
  const hostDir = (p: string): string => p.slice(0, p.lastIndexOf("\\")).replace(/\\/g, "/");
  const broker = brokerConfigText(args.group);
  const versionArgs = Object.entries(args.versions)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  const script =
    args.mode === "hostProcess"
      ? args.kind === "agent"
        ? hostProcessAgentScript(args.target, configFile, args.group.drain)
        : hostProcessWinsScript(configFile)
      : winsModeScript(args.kind, { upgradeExe, configFile }, args.target, args.group.drain);

  const podSecurity =
    args.mode === "hostProcess"
      ? {
          securityContext: { windowsOptions: { hostProcess: true, runAsUserName: "NT AUTHORITY\\SYSTEM" } },
          hostNetwork: true,
        }
      : {};
  const contentMap = args.target && "configMap" in args.target.content ? args.target.content.configMap : undefined;
  const wins = args.mode === "wins";
  const volumes = [
    { name: "config", configMap: { name } },
    ...(contentMap ? [{ name: "content", configMap: { name: contentMap } }] : []),
    ...(wins
      ? [
          { name: "wins-pipe", hostPath: { path: "\\\\.\\pipe\\rancher_wins" } },
          { name: "wins-dir", hostPath: { path: hostDir(upgradeExe), type: "DirectoryOrCreate" } },
        ]
      : []),
    ...(wins && args.kind === "wins"
      ? [{ name: "wins-config", hostPath: { path: hostDir(configFile), type: "DirectoryOrCreate" } }]
      : []),
  ];
  const mounts = [
    { name: "config", mountPath: wins ? "C:\\config" : "config" },
    ...(contentMap ? [{ name: "content", mountPath: wins ? "C:\\content" : "content" }] : []),
    ...(wins
      ? [
          { name: "wins-pipe", mountPath: "\\\\.\\pipe\\rancher_wins" },
          { name: "wins-dir", mountPath: POD_HOST_DIR },
        ]
      : []),
    ...(wins && args.kind === "wins" ? [{ name: "wins-config", mountPath: POD_CONFIG_DIR }] : []),
  ];
  const tolerations = args.group.tolerations.length > 0 ? args.group.tolerations : [{ operator: "Exists" }];
  const daemonSet: KubeObject = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: {
      name,
      namespace: args.namespace,
      labels,
      // The rollout is Kubernetes' to run, host by host, for as long as the fleet needs; `pulumi up`
      // ends when the new pod template is accepted. Awaiting it would fail every rollout longer than
      // the provider's ten-minute DaemonSet await and turn a deliberately halted one (a host that
      // fails keeps its pod unready) into a failed deployment that every later preview repeats.
      // Follow it with `kubectl rollout status` and the nodes' WinfleetReady condition.
      annotations: { "pulumi.com/skipAwait": "true" },
    },
    spec: {
      selector: { matchLabels: labels },
      // A pod counts as available only once its host converged; a host that fails keeps the rollout waiting.
      minReadySeconds: 10,
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: args.maxUnavailable } },
      template: {
        metadata: {
          labels,
          annotations: { "winfleet.io/rollout": rolloutHash(args), "winfleet.io/versions": versionArgs },
        },
        spec: {
          serviceAccountName: args.serviceAccount,
          nodeSelector: { ...WIN_OS, ...args.group.nodeSelector },
          tolerations,
          ...podSecurity,
          initContainers: [
            {
              name: "upgrade",
              image: args.group.image,
              command: ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", script],
              volumeMounts: mounts,
              // A SAS reaches the pod as a Secret reference, never in its spec.
              ...(args.target && !("configMap" in args.target.content) && args.target.content.auth === "sas"
                ? { env: [{ name: SAS_ENV, valueFrom: { secretKeyRef: { name: CONTENT_SAS_SECRET, key: "sas" } } }] }
                : {}),
            },
          ],
          containers: [
            {
              name: "converged",
              image: args.group.image,
              // Stays up so its readiness keeps reporting the host's state until the next rollout.
              command: [
                "powershell.exe",
                "-NoLogo",
                "-NoProfile",
                "-NonInteractive",
                "-Command",
                "while ($true) { Start-Sleep -Seconds 3600 }",
              ],
              readinessProbe: {
                exec: { command: probeCommand(args, broker.sha256) },
                initialDelaySeconds: 5,
                periodSeconds: 15,
                timeoutSeconds: 10,
                failureThreshold: 3,
                successThreshold: 1,
              },
              // Windows holds the whole container to the limit (its job object): the idle PowerShell above
              // (60-80 MiB) and every exec'd readiness probe (node.exe and the agent, 40-60 MiB) together.
              // Under a tight limit the probe fails, the pod never turns Ready and the rollout halts.
              resources: { requests: { cpu: "1m", memory: "128Mi" }, limits: { memory: "512Mi" } },
              ...(args.mode === "wins" ? { volumeMounts: mounts.filter((m) => m.name === "wins-pipe") } : {}),
            },
          ],
          volumes,
        },
      },
    },
  };
  const configMap: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: args.namespace, labels },
    data: { config: broker.text },
  };
  return { configMap, daemonSet };
}
