/**
 * The Pulumi program: reads the stack config once (one zod schema), builds
 * the content bundle, and composes the components — the cluster side, the
 * published content, a pool per `azure` entry, a host per `byo` entry, and
 * the upgraders. `local` pools' hosts are run by `winfleet local`, never
 * provisioned; when the stack names a cluster they join it as any pool's nodes
 * do, so the cluster side (join, content, upgraders) covers them too.
 * Exports, per pool, the node names, the bootstrap's SHA-256 and the content URL.
 */
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { ValidationError, formatIssues } from "../agent/common";
import { AgentUpgrader } from "../components/agent-upgrader";
import { ByoWindowsHost } from "../components/byo-windows-host";
import { CalicoWindows, type CalicoWindowsArgs } from "../components/calico-windows";
import { ClusterJoin } from "../components/cluster-join";
import { ContentBundle, buildArchive } from "../components/content-bundle";
import {
  AGENT_NSSM,
  DEFAULT_NODE_RUNTIME,
  MIRROR_VARIABLE,
  mirroredUrl,
  type NodeConfigArgs,
  type NodeRuntime,
  type PinnedArtifact,
  POOL_LABEL,
} from "../components";
import { WindowsNodePool } from "../components/windows-node-pool";
import { WinsUpgrader } from "../components/wins-upgrader";
import { loadCatalog } from "../agent/content";
import { type FleetConfig, parseFleetConfig } from "./config";
import { missingContentVariables } from "./content-variables";
import { stackPath } from "./stack-file";

/** What the stack exports. */
export interface FleetOutputs {
  readonly pools: Record<
    string,
    {
      readonly nodeNames: readonly string[];
      readonly bootstrapSha256: Record<string, string> | string;
      readonly contentUrl: string;
    }
  >;
  readonly contentSha256?: string;
}

/** The stack's fleet config, or a RunError naming every bad key path. */
export function readFleet(config = new pulumi.Config("winfleet")): FleetConfig {
  try {
    return parseFleetConfig(config.requireObject("fleet"));
  } catch (e) {
    if (e instanceof ValidationError)
      throw new pulumi.RunError(`the stack config is invalid:\n${formatIssues(e.issues)}`);
    throw e;
  }
}

/** What every node is configured with, from the stack (the components take no stack schema). */
export function nodeConfigOf(fleet: FleetConfig): NodeConfigArgs {
  return {
    template: fleet.content.template,
    templateVersion: fleet.content.templateVersion,
    variables: { ...fleet.content.variables, ...(fleet.mirror ? { [MIRROR_VARIABLE]: fleet.mirror.url } : {}) },
    agentVersion: fleet.agent?.version ?? "",
    ...(fleet.agent?.publicKey ? { publicKey: fleet.agent.publicKey } : {}),
    joinMethod: fleet.cluster?.join.method ?? "kubeadm",
  };
}

/**
 * What the bootstrap downloads: the Node runtime and NSSM through the stack's mirror when it has one (their digests
 * pinned all the same), the agent bundle from where the stack says.
 */
export function bootstrapDownloadsOf(
  agent: NonNullable<FleetConfig["agent"]>,
  mirror: string | undefined,
): { node: NodeRuntime; agent: PinnedArtifact & { version: string }; nssmUrl?: string } {
  const runtime = agent.node ? { ...agent.node, exe: DEFAULT_NODE_RUNTIME.exe } : DEFAULT_NODE_RUNTIME;
  return {
    node: { ...runtime, url: mirroredUrl(runtime.url, mirror) },
    agent: { ...agent.bundle, version: agent.version },
    ...(mirror ? { nssmUrl: mirroredUrl(AGENT_NSSM.url, mirror) } : {}),
  };
}

/** The storage account an Azure pool reads its content from with its identity, when it does. */
export function contentAccountOf(
  fleet: FleetConfig,
): { readonly resourceGroup: string; readonly name: string } | undefined {
  const publish = fleet.content.publish;
  return publish.to === "blob" ? { resourceGroup: publish.resourceGroup, name: publish.storageAccount } : undefined;
}

/**
 * What turns on Calico for Windows in the cluster's operator: the API server the nodes join and the stack's
 * `cluster.calicoWindows`; undefined where the stack does not: its template (`packages`) has no calico component,
 * it joins RKE2, or says `cluster.calicoWindows: false`.
 */
export function calicoWindowsOf(fleet: FleetConfig, packages: readonly string[]): CalicoWindowsArgs | undefined {
  const cluster = fleet.cluster;
  if (!cluster || cluster.join.method !== "kubeadm" || cluster.calicoWindows === false) return undefined;
  if (!packages.some((p) => p.startsWith("calico_"))) return undefined;
  return {
    apiServer: cluster.join.apiServer,
    serviceCidrs: cluster.calicoWindows.serviceCidrs,
    ...(cluster.calicoWindows.vxlanAdapter ? { vxlanAdapter: cluster.calicoWindows.vxlanAdapter } : {}),
  };
}

/** The program. */
export async function fleetProgram(): Promise<FleetOutputs> {
  const config = new pulumi.Config("winfleet");
  const fleet = readFleet(config);
  const pools: Record<string, FleetOutputs["pools"][string]> = {};
  const deployed = fleet.pools.filter((p) => p.kind !== "local");
  for (const p of fleet.pools.filter((x) => x.kind === "local"))
    pools[p.name] = { nodeNames: [], bootstrapSha256: "", contentUrl: "winfleet local up" };
  if (!fleet.cluster || !fleet.agent) return { pools };
  const joined = fleet.pools;

  const ns = fleet.cluster.namespace;
  const join = new ClusterJoin("cluster", {
    namespace: ns,
    join: fleet.cluster.join,
    secret: config.requireSecret(fleet.cluster.join.tokenSecret),
  });
  const archive = await buildArchive(stackPath(fleet.content.dir), join_(".winfleet", "build"));
  if (
    !archive.templates.some((t) => t.name === fleet.content.template && t.version === fleet.content.templateVersion)
  ) {
    const have = archive.templates.map((t) => `${t.name} ${t.version}`).join(", ");
    throw new pulumi.RunError(
      `winfleet:fleet.content: template ${fleet.content.template} ${fleet.content.templateVersion} is not in ${fleet.content.dir} (it has: ${have || "no templates"})`,
    );
  }
  const catalog = await loadCatalog(stackPath(fleet.content.dir));
  const template = catalog.templates.find(
    (t) => t.name === fleet.content.template && t.version === fleet.content.templateVersion,
  );
  const calico = calicoWindowsOf(fleet, template?.packages ?? []);
  if (calico) new CalicoWindows("calico-windows", calico, { dependsOn: [join] });
  const missing = missingContentVariables(fleet, catalog, {
    join: [...Object.keys(join.variables), ...Object.keys(join.secrets)],
    pool: Object.fromEntries(
      deployed.map((p) => [p.name, ["KUBE_NODE_LABELS", ...(p.registerTaint ? ["KUBE_REGISTER_TAINT"] : [])]]),
    ),
  });
  if (missing.length > 0)
    throw new pulumi.RunError(
      `the stack leaves required content variables without a value:\n  ${missing.join("\n  ")}`,
    );
  const content = new ContentBundle(
    "content",
    { archive, publish: fleet.content.publish, namespace: ns },
    { dependsOn: [join] },
  );
  const bootstrap = bootstrapDownloadsOf(fleet.agent, fleet.mirror?.url);
  // The node's secret variables: the cluster side's (the join token, kube-proxy's token), and the content secrets.
  const secrets: Record<string, pulumi.Output<string>> = { ...join.secrets };
  for (const [variable, key] of Object.entries(fleet.content.secrets)) secrets[variable] = config.requireSecret(key);
  const joinArgs = { variables: join.variables, secrets };
  const node = nodeConfigOf(fleet);
  const storageAccount = contentAccountOf(fleet);
  // Pulumi parses the whole stack config (every host of the fleet) at each read, so a key is read once, not per host.
  const secretOutputs = new Map<string, pulumi.Output<string>>();
  const secret = (key: string): pulumi.Output<string> => {
    let value = secretOutputs.get(key);
    if (!value) secretOutputs.set(key, (value = config.requireSecret(key)));
    return value;
  };

  for (const pool of deployed) {
    const labels = { ...pool.labels, [POOL_LABEL]: pool.name };
    if (pool.kind === "azure") {
      const p = new WindowsNodePool(pool.name, {
        node,
        pool: { ...pool, labels },
        bootstrap,
        content: {
          url: content.url,
          sha256: content.sha256,
          auth: content.auth,
          ...(content.sas ? { sas: content.sas } : {}),
          ...(storageAccount ? { storageAccount } : {}),
        },
        join: joinArgs,
        ...(fleet.content.keyVault ? { keyVault: { id: fleet.content.keyVault, cluster: fleet.cluster.name } } : {}),
        adminPassword: config.requireSecret(pool.adminPasswordSecret),
      });
      pools[pool.name] = { nodeNames: p.nodeNames, bootstrapSha256: p.bootstrapHash, contentUrl: p.contentUrl };
    } else if (pool.kind === "byo") {
      const hashes: Record<string, string> = {};
      for (const host of pool.hosts) {
        // Each host's registrations run before the next host is declared: declared all at once, a fleet's every
        // resource is in flight together, and under the mocks of `winfleet render` (where every registration settles
        // in the same turn) that held 1,000 hosts' promises live at once, most of the render's time spent in the
        // collector. Against an engine this waits for nothing: registrations are RPCs, already on their way.
        await nextTurn();
        const h = new ByoWindowsHost(`${pool.name}-${host.name}`, {
          node,
          pool: { ...pool, labels },
          host: { name: host.name, address: host.address, port: host.port, user: host.user },
          bootstrap,
          content: { archivePath: content.archivePath, sha256: content.sha256 },
          join: joinArgs,
          credential: {
            kind: host.privateKeySecret !== undefined ? "privateKey" : "password",
            value: secret(host.privateKeySecret ?? host.passwordSecret ?? ""),
          },
        });
        hashes[host.name] = h.bootstrapHash;
      }
      pools[pool.name] = { nodeNames: pool.hosts.map((h) => h.name), bootstrapSha256: hashes, contentUrl: content.url };
    }
  }

  if (fleet.upgrader) {
    const common = { namespace: ns, serviceAccount: "winfleet-upgrader", upgrader: fleet.upgrader };
    const target = {
      template: fleet.content.template,
      templateVersion: fleet.content.templateVersion,
      agentVersion: fleet.agent.version,
      contentSha256: content.sha256,
      content: content.configMap ? { configMap: content.configMap } : { url: content.url, auth: content.auth },
    };
    new AgentUpgrader(
      "agent-upgrader",
      {
        ...common,
        pools: joined,
        target,
        versions: {
          agent: fleet.agent.version,
          template: `${fleet.content.template}@${fleet.content.templateVersion}`,
          content: content.sha256,
        },
      },
      { dependsOn: [join, content] },
    );
    // Without the chart's winsConfigs the broker config is the content's (winfleet-broker) alone.
    if (fleet.upgrader.winsConfigs.length > 0)
      new WinsUpgrader("wins-upgrader", { ...common, versions: {} }, { dependsOn: [join] });
  }
  return { pools, contentSha256: content.sha256 };
}

// Resolves after the promises already queued have run (a macrotask, so every microtask before it).
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function join_(...parts: string[]): string {
  return join(process.cwd(), ...parts);
}
