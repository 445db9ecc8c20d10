/**
 * The upgrader DaemonSet of a `local` pool, whose hosts are the local fleet's sandbox hosts:
 * the same rollout contract as a Windows pool's (a pod template that changes exactly when the
 * target does, an init container that moves the host to the target with the host's own agent,
 * and a readiness probe that passes only once the host's agent has converged), with POSIX
 * commands in place of PowerShell. The node stand-in runs these pods as processes on the host,
 * as HostProcess containers run on Windows: `winfleet-agent` is the host's agent, and
 * `$(WINFLEET_AGENT_CONFIG)` and `$(WINFLEET_BROKER)` are the host's config and broker socket.
 */
import type { KubeObject } from "./kube-objects";
import type { AgentTarget, RenderedUpgrader, UpgraderRenderArgs } from "./upgrader-render";

/** Renders a sandbox pool's upgrader; `hash` is the rollout hash of the Windows renderer. */
export function renderSandboxUpgrader(
  args: UpgraderRenderArgs & { readonly target: AgentTarget },
  name: string,
  hash: string,
): RenderedUpgrader {
  const t = args.target;
  const labels = {
    "app.kubernetes.io/name": "winfleet-upgrader",
    "app.kubernetes.io/component": args.kind,
    "winfleet.io/upgrader-group": args.group.name,
  };
  const archive = "content/bundle.tgz";
  const retarget = [
    "winfleet-agent",
    "retarget",
    "--config",
    "$(WINFLEET_AGENT_CONFIG)",
    "--template",
    t.template,
    "--template-version",
    t.templateVersion,
    "--content-sha256",
    t.contentSha256,
  ];
  const source = "configMap" in t.content ? ["--content-archive", archive] : ["--content-url", t.content.url];
  const daemonSet: KubeObject = {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name, namespace: args.namespace, labels, annotations: { "pulumi.com/skipAwait": "true" } },
    spec: {
      selector: { matchLabels: labels },
      minReadySeconds: 10,
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: args.maxUnavailable } },
      template: {
        metadata: { labels, annotations: { "winfleet.io/rollout": hash } },
        spec: {
          serviceAccountName: args.serviceAccount,
          nodeSelector: { "kubernetes.io/os": "windows", ...args.group.nodeSelector },
          tolerations: [{ operator: "Exists" }],
          hostNetwork: true,
          securityContext: { windowsOptions: { hostProcess: true, runAsUserName: "NT AUTHORITY\\SYSTEM" } },
          initContainers: [
            {
              name: "upgrade",
              image: args.group.image,
              command: [...retarget, ...source],
              volumeMounts: "configMap" in t.content ? [{ name: "content", mountPath: "content" }] : [],
            },
          ],
          containers: [
            {
              name: "converged",
              image: args.group.image,
              command: ["sleep", "infinity"],
              // The sandbox hosts run the checkout's agent, so the probe waits for the content alone.
              readinessProbe: {
                exec: {
                  command: [
                    "winfleet-agent",
                    "ready",
                    "--server",
                    "$(WINFLEET_BROKER)",
                    "--template",
                    t.template,
                    "--template-version",
                    t.templateVersion,
                  ],
                },
                // Every probe is a node process on the host: at 5 s, 50 hosts start 10 a second. Three
                // failures in a row, as Kubernetes' default, before a ready host counts unavailable: one
                // probe slowed past its timeout on a loaded machine is not a host gone.
                periodSeconds: 5,
                timeoutSeconds: 10,
                failureThreshold: 3,
                successThreshold: 1,
              },
            },
          ],
          volumes: "configMap" in t.content ? [{ name: "content", configMap: { name: t.content.configMap } }] : [],
        },
      },
    },
  };
  // The group's ConfigMap, as a Windows pool's has for its broker config; it carries nothing that
  // changes with a rollout (the provider replaces a ConfigMap whose data changes).
  const configMap: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: args.namespace, labels },
    data: { group: args.group.name },
  };
  return { configMap, daemonSet };
}
