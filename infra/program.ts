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
import * as azure from "@pulumi/azure-native";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ValidationError, formatIssues } from "../agent/common";
import { AgentUpgrader } from "../components/agent-upgrader";
import { ByoWindowsHost } from "../components/byo-windows-host";
import { CalicoWindows, type CalicoWindowsArgs } from "../components/calico-windows";
import { ClusterJoin } from "../components/cluster-join";
import { ContentBundle, buildArchive } from "../components/content-bundle";
import {
  AGENT_NSSM,
  batchSize,
  computerNames,
  DEFAULT_NODE_RUNTIME,
  defaultNamespace,
  localHostNames,
  MIRROR_VARIABLE,
  mirroredUrl,
  type NodeConfigArgs,
  type NodeRuntime,
  type PinnedArtifact,
  POOL_LABEL,
  type PoolNodes,
  scaleSetPrefix,
  STACK_LABEL,
  stackSlug,
} from "../components";
import { WindowsNodePool } from "../components/windows-node-pool";
import { WinsUpgrader } from "../components/wins-upgrader";
import { loadCatalog } from "../agent/content";
import { type FleetConfig, azureSubscription, parseFleetConfig } from "./config";
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
  /** The upgrader DaemonSets, which a deploy waits for (scripts/rollout-status.sh): empty without an upgrader. */
  readonly upgraders?: { readonly namespace: string; readonly daemonSets: readonly string[] };
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
 * The providers every resource is deployed with, never the ambient ones: Azure in the stack's
 * subscription (not whichever `az login` or ARM_SUBSCRIPTION_ID selects), the cluster through the
 * stack's kubeconfig context when it names one. `clusterIdentifier` keeps a changed kubeconfig
 * (a preview's read-only user, a deploy's) from replacing the provider and with it every object.
 */
export function fleetProviders(fleet: FleetConfig): pulumi.ProviderResource[] {
  const providers: pulumi.ProviderResource[] = [];
  const subscription = azureSubscription(fleet);
  if (subscription) providers.push(new azure.Provider("azure", { subscriptionId: subscription }));
  if (fleet.cluster)
    providers.push(
      new k8s.Provider("cluster", {
        clusterIdentifier: fleet.cluster.name,
        ...(fleet.cluster.kubeContext ? { context: fleet.cluster.kubeContext } : {}),
      }),
    );
  return providers;
}

/**
 * Options for a component that must come after `deps`. A component's own `dependsOn` does not
 * reach the resources it creates (the SDK gathers only a resource's own), so the transformation
 * gives each of them the dependencies too.
 */
export function after(deps: pulumi.Resource[], providers: pulumi.ProviderResource[]): pulumi.ComponentResourceOptions {
  const wait: pulumi.ResourceTransformation = (a) =>
    a.type.startsWith("winfleet:")
      ? undefined
      : { props: a.props, opts: pulumi.mergeOptions(a.opts, { dependsOn: deps }) };
  return { providers, ...(deps.length > 0 ? { dependsOn: deps, transformations: [wait] } : {}) };
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
  const stack = pulumi.getStack();
  const pools: Record<string, FleetOutputs["pools"][string]> = {};
  const deployed = fleet.pools.filter((p) => p.kind !== "local");
  for (const p of fleet.pools.filter((x) => x.kind === "local"))
    pools[p.name] = { nodeNames: [], bootstrapSha256: "", contentUrl: "winfleet local up" };
  if (!fleet.cluster || !fleet.agent) return { pools };
  const joined = fleet.pools;

  // The stack names what it puts outside its namespace, and by default the namespace: two stacks can share a cluster.
  const ns = fleet.cluster.namespace ?? defaultNamespace(stack);
  // Every node the stack declares, by name where it knows one: each gets a join token for that name alone.
  const nodes: PoolNodes[] = joined.map((p) =>
    p.kind === "azure"
      ? p.mode === "vmss"
        ? { pool: p.name, prefix: scaleSetPrefix(stack, p.name) }
        : { pool: p.name, names: computerNames(stack, p.name, p.count) }
      : p.kind === "byo"
        ? { pool: p.name, names: p.hosts.map((h) => h.name) }
        : { pool: p.name, names: localHostNames(p.name, p.hosts) },
  );
  const providers = fleetProviders(fleet);
  const join = new ClusterJoin(
    "cluster",
    {
      namespace: ns,
      stack,
      join: fleet.cluster.join,
      secret: config.requireSecret(fleet.cluster.join.tokenSecret),
      nodes,
      seed: `${pulumi.getProject()}/${stack}`,
    },
    { providers },
  );
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
  if (calico) new CalicoWindows("calico-windows", calico, { dependsOn: [join], providers });
  const missing = missingContentVariables(fleet, catalog, {
    join: [...Object.keys(join.variables), join.tokenVariable, ...Object.keys(join.secrets)],
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
    after([join], providers),
  );
  const bootstrap = bootstrapDownloadsOf(fleet.agent, fleet.mirror?.url);
  // A node's secret variables: the cluster side's (its own join token, kube-proxy's token), and the content secrets.
  const contentSecrets: Record<string, pulumi.Output<string>> = {};
  for (const [variable, key] of Object.entries(fleet.content.secrets))
    contentSecrets[variable] = config.requireSecret(key);
  const joinFor = (pool: string, node?: string) => ({
    variables: join.variables,
    secrets: { ...join.secretsFor(pool, node), ...contentSecrets },
  });
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
    const labels = { ...pool.labels, [POOL_LABEL]: pool.name, [STACK_LABEL]: stackSlug(stack) };
    // A change that must touch a pool's machines takes this many at once.
    const maxUnavailable = pool.maxUnavailable ?? fleet.upgrader?.maxUnavailable ?? 1;
    if (pool.kind === "azure") {
      const p = new WindowsNodePool(
        pool.name,
        {
          stack,
          node,
          pool: { ...pool, labels, batch: batchSize(maxUnavailable, pool.count) },
          bootstrap,
          content: {
            url: content.url,
            sha256: content.sha256,
            auth: content.auth,
            ...(content.sas ? { sas: content.sas } : {}),
            ...(storageAccount ? { storageAccount } : {}),
          },
          join:
            pool.mode === "vmss"
              ? joinFor(pool.name)
              : {
                  ...joinFor(pool.name, computerNames(stack, pool.name, pool.count)[0]),
                  secretsFor: (computerName: string) => joinFor(pool.name, computerName).secrets,
                },
          ...(fleet.content.keyVault ? { keyVault: { id: fleet.content.keyVault } } : {}),
          adminPassword: config.requireSecret(pool.adminPasswordSecret),
        },
        // The machines' bootstrap reads the published content and joins with the token.
        after([join, content], providers),
      );
      pools[pool.name] = { nodeNames: p.nodeNames, bootstrapSha256: p.bootstrapHash, contentUrl: p.contentUrl };
    } else if (pool.kind === "byo") {
      const hashes: Record<string, string> = {};
      const batch = batchSize(maxUnavailable, pool.hosts.length);
      const runs: pulumi.Resource[] = [];
      for (const [i, host] of pool.hosts.entries()) {
        // Each host's registrations run before the next host is declared: declared all at once, a fleet's every
        // resource is in flight together, and under the mocks of `winfleet render` (where every registration settles
        // in the same turn) that held 1,000 hosts' promises live at once, most of the render's time spent in the
        // collector. Against an engine this waits for nothing: registrations are RPCs, already on their way.
        await nextTurn();
        const h = new ByoWindowsHost(
          `${pool.name}-${host.name}`,
          {
            node,
            pool: { ...pool, labels },
            host: {
              name: host.name,
              address: host.address,
              port: host.port,
              user: host.user,
              hostKey: host.hostKey,
              trustOnFirstUse: host.trustOnFirstUse,
            },
            platform: pool.platform,
            bootstrap,
            content: { archivePath: content.archivePath, sha256: content.sha256 },
            join: joinFor(pool.name, host.name),
            credential: {
              kind: host.privateKeySecret !== undefined ? "privateKey" : "password",
              value: secret(host.privateKeySecret ?? host.passwordSecret ?? ""),
            },
            ...(runs[i - batch] ? { after: runs[i - batch] } : {}),
          },
          // The bootstrap joins with the token, and the upgrades it sets up read the published content.
          after([join, content], providers),
        );
        runs.push(h.bootstrapRun);
        hashes[host.name] = h.bootstrapHash;
      }
      pools[pool.name] = { nodeNames: pool.hosts.map((h) => h.name), bootstrapSha256: hashes, contentUrl: content.url };
    }
  }

  const daemonSets: string[] = [];
  if (fleet.upgrader) {
    const common = { namespace: ns, serviceAccount: "winfleet-upgrader", upgrader: fleet.upgrader, stack };
    const target = {
      template: fleet.content.template,
      templateVersion: fleet.content.templateVersion,
      agentVersion: fleet.agent.version,
      contentSha256: content.sha256,
      content: content.configMap ? { configMap: content.configMap } : { url: content.url, auth: content.auth },
    };
    const agent = new AgentUpgrader(
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
      after([join, content], providers),
    );
    daemonSets.push(...agent.daemonSets);
    // Without the chart's winsConfigs the broker config is the content's (winfleet-broker) alone.
    if (fleet.upgrader.winsConfigs.length > 0)
      daemonSets.push(
        ...new WinsUpgrader("wins-upgrader", { ...common, versions: {} }, after([join], providers)).daemonSets,
      );
  }
  return { pools, contentSha256: content.sha256, upgraders: { namespace: ns, daemonSets } };
}

// Resolves after the promises already queued have run (a macrotask, so every microtask before it).
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function join_(...parts: string[]): string {
  return join(process.cwd(), ...parts);
}
