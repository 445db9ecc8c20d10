/**
 * The upgrader DaemonSets, rendered as plain Kubernetes objects (pure and
 * deterministic). One DaemonSet per node group, its selector unique to the group
 * (the rancher-wins-upgrader chart shared one selector across groups). The pod
 * template carries a hash of exactly the versions and config it rolls out, so it
 * changes — and Kubernetes rolls the group node by node — when and only when
 * one of those changes.
 */
import { createHash } from "node:crypto";
import { canonicalJson } from "../agent/common/canonical-json";

/** What an upgrader rolls out. */
export type UpgraderKind = "agent" | "wins";

/** One node group: the chart's `winsConfigs[]` entry, or one per pool. */
export interface UpgraderGroup {
  readonly name: string;
  readonly image: string;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly tolerations: readonly Readonly<Record<string, unknown>>[];
  /** The wins-compatible config the group's hosts run (already key-fixed). */
  readonly config: Readonly<Record<string, unknown>>;
}

/** Inputs of {@link renderUpgrader}. */
export interface UpgraderRenderArgs {
  readonly kind: UpgraderKind;
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly group: UpgraderGroup;
  readonly mode: "hostProcess" | "wins";
  readonly maxUnavailable: number | string;
  /** Versions rolled out: agent, content template… */
  readonly versions: Readonly<Record<string, string>>;
  /** The chart's rkeWindowsPathPrefix, ending in `\` or `/`. */
  readonly pathPrefix: string;
  /** Deliver the upgrader under an already-whitelisted path (the chart's masquerade). */
  readonly masqueradeAs?: string;
}

/** The objects for one group: its ConfigMap and DaemonSet. */
export interface RenderedUpgrader {
  readonly configMap: Record<string, unknown>;
  readonly daemonSet: Record<string, unknown>;
}

const WIN_OS = { "kubernetes.io/os": "windows" };

/** Rewrites a chart-era wins config so wins ≥ 0.1.2 and winfleet read its whitelist: `white_list` with camelCase keys. */
export function fixWinsConfig(config: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const nested: Record<string, string> = { process_paths: "processPaths", processpaths: "processPaths", proxy_ports: "proxyPorts", proxyports: "proxyPorts" };
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

/** The hash that decides whether the pod template changes. */
export function rolloutHash(args: Pick<UpgraderRenderArgs, "versions" | "group" | "mode" | "masqueradeAs">): string {
  return createHash("sha256")
    .update(canonicalJson({ versions: args.versions, config: args.group.config, image: args.group.image, mode: args.mode, masquerade: args.masqueradeAs ?? null }))
    .digest("hex")
    .slice(0, 32);
}

/** Renders one group's upgrader. */
export function renderUpgrader(args: UpgraderRenderArgs): RenderedUpgrader {
  const name = `winfleet-${args.kind}-upgrader-${args.group.name}`;
  const labels = { "app.kubernetes.io/name": "winfleet-upgrader", "app.kubernetes.io/component": args.kind, "winfleet.io/upgrader-group": args.group.name };
  const configFile = prefixed(args.pathPrefix, "etc\\rancher\\wins\\config");
  const upgradeExe = args.masqueradeAs ?? prefixed(args.pathPrefix, "etc\\rancher\\wins\\winfleet-upgrade.exe");
  const hostDir = upgradeExe.slice(0, upgradeExe.lastIndexOf("\\"));
  const versionArgs = Object.entries(args.versions).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join(" ");
  const upArgs = args.kind === "agent"
    ? `up --bundle C:\\winfleet\\bundle --install-dir C:\\ProgramData\\winfleet --config ${configFile} --manager windows --detach`
    : `service reload-config --config ${configFile}`;
  const script = args.mode === "hostProcess"
    ? [
      "$ErrorActionPreference = 'Stop'",
      "Copy-Item -Force \"$env:CONTAINER_SANDBOX_MOUNT_POINT\\config\\config\" '" + configFile + "'",
      "Copy-Item -Recurse -Force \"$env:CONTAINER_SANDBOX_MOUNT_POINT\\winfleet\\bundle\" 'C:\\winfleet\\bundle'",
      `& 'C:\\ProgramData\\winfleet\\node\\package\\bin\\node.exe' 'C:\\ProgramData\\winfleet\\current\\bin\\winfleet-agent.js' ${upArgs}`,
      "exit $LASTEXITCODE",
    ].join("; ")
    : [
      "$ErrorActionPreference = 'Stop'",
      `Copy-Item -Force 'C:\\winfleet\\winfleet-agent.exe' '${upgradeExe}'`,
      `Copy-Item -Force 'C:\\winfleet\\winfleet-agent.exe' 'C:\\host-wins\\${upgradeExe.slice(upgradeExe.lastIndexOf("\\") + 1)}'`,
      "Copy-Item -Force 'C:\\config\\config' 'C:\\host-wins\\config'",
      `& 'C:\\winfleet\\winfleet-agent.exe' cli prc run --path '${upgradeExe}' --args '${upArgs}'`,
      "exit $LASTEXITCODE",
    ].join("; ");

  const podSecurity = args.mode === "hostProcess"
    ? { securityContext: { windowsOptions: { hostProcess: true, runAsUserName: "NT AUTHORITY\\SYSTEM" } }, hostNetwork: true }
    : {};
  const volumes = [
    { name: "config", configMap: { name } },
    ...(args.mode === "wins"
      ? [
        { name: "wins-pipe", hostPath: { path: "\\\\.\\pipe\\rancher_wins" } },
        { name: "wins-dir", hostPath: { path: hostDir.replace(/\\/g, "/"), type: "DirectoryOrCreate" } },
      ]
      : []),
  ];
  const mounts = [
    { name: "config", mountPath: args.mode === "hostProcess" ? "config" : "C:\\config" },
    ...(args.mode === "wins"
      ? [{ name: "wins-pipe", mountPath: "\\\\.\\pipe\\rancher_wins" }, { name: "wins-dir", mountPath: "C:\\host-wins" }]
      : []),
  ];
  const tolerations = args.group.tolerations.length > 0 ? args.group.tolerations : [{ operator: "Exists" }];
  const daemonSet = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name, namespace: args.namespace, labels },
    spec: {
      selector: { matchLabels: labels },
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: args.maxUnavailable } },
      template: {
        metadata: { labels, annotations: { "winfleet.io/rollout": rolloutHash(args), "winfleet.io/versions": versionArgs } },
        spec: {
          serviceAccountName: args.serviceAccount,
          nodeSelector: { ...WIN_OS, ...args.group.nodeSelector },
          tolerations,
          ...podSecurity,
          initContainers: [{
            name: "upgrade",
            image: args.group.image,
            command: ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", script],
            volumeMounts: mounts,
          }],
          containers: [{
            name: "hold",
            image: args.group.image,
            // A DaemonSet's pods restart always; this one only waits for the next rollout.
            command: ["powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", "while ($true) { Start-Sleep -Seconds 3600 }"],
            resources: { requests: { cpu: "1m", memory: "16Mi" }, limits: { memory: "64Mi" } },
          }],
          volumes,
        },
      },
    },
  };
  const configMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: args.namespace, labels },
    data: { config: `${canonicalJson(fixWinsConfig(args.group.config))}\n` },
  };
  return { configMap, daemonSet };
}
