/**
 * `WindowsNodePool`: Windows Server VMs on Azure (one scale set, or individual
 * VMs each with its NIC). The bootstrap travels as userData; a
 * CustomScriptExtension runs it, with the join token and any content SAS only
 * in `protectedSettings`, as Pulumi secrets, and `forceUpdateTag` set to the
 * bootstrap's epoch (bootstrap.ts), so a bootstrap that does something new runs
 * again, and a new agent or template version, or a rotated secret, runs
 * nothing: the upgrader is the one gate for versions. Nodes are tagged with
 * their template and versions.
 *
 * The other secret variables (kubeconfigs, kube-proxy's token) would not fit
 * the extension's 8,191-character command line: they go, as one JSON object,
 * into a Key Vault secret of the pool's own, which only the pool's identity
 * may read (Key Vault Secrets User on that secret alone); the bootstrap reads
 * its latest version with an IMDS token, so rotating one changes no machine's
 * settings (a new machine reads the new value).
 *
 * A change that must touch running machines goes `maxUnavailable` at a time
 * (the pool's, else the upgrader's): on `vms`, each machine's extension and
 * (for a new image, which replaces them) the machine itself wait for the
 * extension of the machine that many places before it. A scale set's model
 * change reaches no running instance (Manual policy): docs/azure.md says how to
 * roll its instances in batches.
 *
 * A scale set carries the extension in its own model: with the Manual upgrade
 * policy a separate extension resource would only change the model, and the
 * instances that already exist would never run it. Nodes that read their
 * content with a managed identity get a user-assigned one, created with its
 * role assignment before any machine, so the bootstrap's first read does not
 * race the assignment (a system-assigned identity exists only once its machine
 * does, and an inline extension runs while the machine is being created).
 *
 * Every name carries a digest of stack and pool (azure-names.ts). Azure refuses
 * a changed admin password on a machine, so machines ignore it and individual
 * VMs get it through the VMAccess extension; a scale set of more than 100
 * machines spans placement groups.
 */
import * as azure from "@pulumi/azure-native";
import * as pulumi from "@pulumi/pulumi";
import { type BootstrapArgs, bootstrapEpoch, bootstrapHash, renderBootstrap } from "./bootstrap";
import {
  computerNames,
  poolIdentity,
  poolVaultSecret,
  scaleSetName,
  scaleSetPrefix,
  storageAccountId,
  subscriptionOf,
} from "./azure-names";
import { extensionCommand } from "./extension-command";
import { type NodeSecrets, secretsJson, splitSecrets } from "./node-secrets";
import {
  type ImageArgs,
  type NodeConfigArgs,
  type PoolValues,
  imageOf,
  nodeAgentConfig,
  poolTags,
} from "./pool-render";

/** An Azure pool's machines, and what of the node config is the pool's own (labels, taint, variables). */
export interface AzurePoolArgs extends PoolValues {
  /** The pool's name: it names the scale set or the VMs, and the identity. */
  readonly name: string;
  readonly location: string;
  /** The resource group the machines and the identity go into (it must exist). */
  readonly resourceGroup: string;
  /** The full resource id of the subnet the nodes join; its subscription is the pool's. */
  readonly subnetId: string;
  readonly vmSize: string;
  readonly image: ImageArgs;
  /** One scale set, or individual VMs each with its NIC. */
  readonly mode: "vmss" | "vms";
  readonly count: number;
  readonly adminUsername: string;
  /** A public IP per node. */
  readonly publicIp: boolean;
  /** Machines a change that must touch them takes at once (at least 1). */
  readonly batch: number;
}

/** Arguments of {@link WindowsNodePool}. */
export interface WindowsNodePoolArgs {
  /** The stack: with the pool's name it makes the pool's Azure names its own (azure-names.ts). */
  readonly stack: string;
  /** What every node of the fleet runs and how it joins. */
  readonly node: NodeConfigArgs;
  readonly pool: AzurePoolArgs;
  /** Everything of the bootstrap but the content, which comes from the published bundle. */
  readonly bootstrap: Omit<BootstrapArgs, "content" | "agentConfig" | "secretVariables">;
  /**
   * The published content bundle and how nodes read it. With `auth: managedIdentity`, the
   * storage account it is on: the pool's identity gets Storage Blob Data Reader there.
   */
  readonly content: {
    readonly url: string;
    readonly sha256: string;
    readonly auth: "none" | "managedIdentity" | "sas";
    readonly sas?: pulumi.Input<string>;
    readonly storageAccount?: { readonly resourceGroup: string; readonly name: string };
  };
  /**
   * Join variables (non-secret), and the secret variables: the join token under the variable content reads, and the
   * content secrets.
   */
  readonly join: {
    readonly variables: Readonly<Record<string, string>>;
    readonly secrets: NodeSecrets;
    /** `vms` pools: each machine's own secrets (its join token), by computer name; else {@link secrets} for all. */
    readonly secretsFor?: (computerName: string) => NodeSecrets;
  };
  /**
   * The Key Vault (resource id, RBAC authorization) for the secrets other than the join token, required when there
   * are any.
   */
  readonly keyVault?: { readonly id: string };
  readonly adminPassword: pulumi.Input<string>;
}

/** Key Vault Secrets User, Azure's built-in role id: reads secret values, nothing else. */
export const SECRETS_USER_ROLE = "4633458b-17de-408a-b874-0445c86b69e6";
/** Key Vault's limit on a secret's value. */
export const VAULT_SECRET_LIMIT = 25 * 1024;

/** Storage Blob Data Reader, Azure's built-in role id. */
export const BLOB_READER_ROLE = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1";
/** The bootstrap extension's name on every machine. */
export const BOOTSTRAP_EXTENSION = "winfleet-bootstrap";
/** The extension that sets an individual VM's admin password (Azure's VMAccess for Windows). */
export const PASSWORD_EXTENSION = "winfleet-admin-password";
const VM_ACCESS = {
  publisher: "Microsoft.Compute",
  type: "VMAccessAgent",
  typeHandlerVersion: "2.4",
  autoUpgradeMinorVersion: true,
} as const;
/** The most machines one placement group of a scale set holds. */
export const SINGLE_PLACEMENT_GROUP_LIMIT = 100;
const CSE = {
  publisher: "Microsoft.Compute",
  type: "CustomScriptExtension",
  typeHandlerVersion: "1.10",
  autoUpgradeMinorVersion: true,
} as const;

// Whether two URLs name the same host (a blob URL's host is its storage account).
function sameHost(a: string, b: string): boolean {
  try {
    return new URL(a).host.toLowerCase() === new URL(b).host.toLowerCase();
  } catch {
    return false;
  }
}

function dependsOnList(d: pulumi.CustomResourceOptions["dependsOn"]): pulumi.Input<pulumi.Resource>[] {
  return d === undefined ? [] : Array.isArray(d) ? d : [d as pulumi.Input<pulumi.Resource>];
}

/** A pool of Windows nodes on Azure. */
export class WindowsNodePool extends pulumi.ComponentResource {
  /** Computer names (individual VMs) or the scale set's name prefix followed by `*`. */
  readonly nodeNames: string[];
  readonly bootstrapHash: string;
  readonly contentUrl: string;

  constructor(name: string, args: WindowsNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:WindowsNodePool", name, {}, opts);
    const { pool } = args;
    const storage = args.content.auth === "managedIdentity" ? args.content.storageAccount : undefined;
    const readsWithIdentity = storage !== undefined;
    const { inline, bulky } = splitSecrets(args.join.secrets);
    const larger = Object.keys(bulky);
    if (larger.length > 0 && !args.keyVault)
      throw new pulumi.ResourceError(
        `keyVault is required (a stack sets content.keyVault): the nodes' ${larger.join(", ")} would not fit the extension's command line`,
        this,
      );
    const vault =
      larger.length > 0 && args.keyVault ? poolVaultSecret(args.keyVault.id, args.stack, pool.name) : undefined;
    const identityRef = readsWithIdentity || vault ? poolIdentity(args.stack, pool) : undefined;
    // The identity can read the whole storage account, so a bundle kept there is read with it too.
    const agentAuth =
      readsWithIdentity && sameHost(args.bootstrap.agent.url, args.content.url) ? "managedIdentity" : "none";
    const script = renderBootstrap({
      ...args.bootstrap,
      agent: { ...args.bootstrap.agent, auth: agentAuth },
      content: { kind: "url", url: args.content.url, sha256: args.content.sha256, auth: args.content.auth },
      agentConfig: nodeAgentConfig(args.node, args.join.variables, pool),
      secretVariables: Object.keys(args.join.secrets),
      ...(identityRef ? { identity: identityRef.id } : {}),
      ...(vault ? { vaultSecret: vault.url } : {}),
    });
    const hash = bootstrapHash(script);
    const epoch = bootstrapEpoch(script);
    this.bootstrapHash = hash;
    this.contentUrl = args.content.url;
    const userData = Buffer.from(script).toString("base64");
    const tags = poolTags(args.node, pool.name, hash, epoch);
    const image = imageOf(pool.image);
    const osDisk = { createOption: "FromImage", managedDisk: { storageAccountType: "Premium_LRS" } };
    const windowsConfiguration = { provisionVMAgent: true, enableAutomaticUpdates: false, timeZone: "UTC" };

    // The identity and its roles first; machines wait for the assignments, not merely for the identity.
    let identity: { type: "SystemAssigned" | "UserAssigned"; userAssignedIdentities?: pulumi.Input<string>[] } = {
      type: "SystemAssigned",
    };
    const machineOpts: pulumi.CustomResourceOptions = { parent: this, deleteBeforeReplace: true };
    if (identityRef) {
      const uai = new azure.managedidentity.UserAssignedIdentity(
        `${name}-identity`,
        { resourceGroupName: pool.resourceGroup, location: pool.location, resourceName: identityRef.name, tags },
        { parent: this, deleteBeforeReplace: true },
      );
      const waits: pulumi.Resource[] = [];
      if (storage) {
        const subscription = subscriptionOf(pool.subnetId);
        waits.push(
          new azure.authorization.RoleAssignment(
            `${name}-content-reader`,
            {
              principalId: uai.principalId,
              principalType: "ServicePrincipal",
              roleDefinitionId: `/subscriptions/${subscription}/providers/Microsoft.Authorization/roleDefinitions/${BLOB_READER_ROLE}`,
              scope: storageAccountId(subscription, storage.resourceGroup, storage.name),
            },
            { parent: this },
          ),
        );
      }
      if (vault && args.keyVault) {
        const value = secretsJson(bulky).apply((json) => {
          if (json.length > VAULT_SECRET_LIMIT)
            throw new Error(
              `the nodes' secrets take ${json.length} characters; a Key Vault secret holds at most ${VAULT_SECRET_LIMIT}`,
            );
          return json;
        });
        const secret = new azure.keyvault.Secret(
          `${name}-secrets`,
          // Not the pool's tags: they carry the bootstrap's hash, and every change would write a new version.
          {
            resourceGroupName: vault.resourceGroup,
            vaultName: vault.vaultName,
            secretName: vault.name,
            properties: { value: pulumi.secret(value), contentType: "application/json" },
            tags: { "winfleet-pool": pool.name },
          },
          { parent: this },
        );
        const reader = new azure.authorization.RoleAssignment(
          `${name}-secrets-reader`,
          {
            principalId: uai.principalId,
            principalType: "ServicePrincipal",
            roleDefinitionId: `/subscriptions/${subscriptionOf(args.keyVault.id)}/providers/Microsoft.Authorization/roleDefinitions/${SECRETS_USER_ROLE}`,
            // The one secret, not the vault: another pool's identity cannot read it.
            scope: vault.id,
          },
          { parent: this, dependsOn: [secret] },
        );
        waits.push(secret, reader);
      }
      identity = { type: "UserAssigned", userAssignedIdentities: [uai.id] };
      machineOpts.dependsOn = waits;
    }
    // The command line carries the join token, each machine's own where the pool has one per machine.
    const settingsWith = (small: NodeSecrets) =>
      pulumi.secret(
        pulumi.all([secretsJson(small), args.content.sas ?? ""]).apply(([secrets, sas]) => ({
          commandToExecute: extensionCommand(epoch, secrets, args.content.auth === "sas" ? sas : undefined),
        })),
      );
    const protectedSettings = settingsWith(inline);

    // Azure refuses to change a machine's admin password (PropertyChangeNotAllowed): a rotation
    // reaches individual VMs through the VMAccess extension below, and never fails an update.
    const keepPassword = (path: string): pulumi.CustomResourceOptions => ({ ...machineOpts, ignoreChanges: [path] });
    if (pool.mode === "vmss") {
      const prefix = scaleSetPrefix(args.stack, pool.name);
      new azure.compute.VirtualMachineScaleSet(
        `${name}-vmss`,
        {
          resourceGroupName: pool.resourceGroup,
          location: pool.location,
          vmScaleSetName: scaleSetName(args.stack, pool.name),
          // Said outright: the CLI and the portal default to Flexible, which has no scale-set model to carry the
          // extension.
          orchestrationMode: "Uniform",
          identity,
          sku: { name: pool.vmSize, tier: "Standard", capacity: pool.count },
          // Upgrades roll through the agent and the upgrader DaemonSets, not by reimaging:
          // a changed bootstrap reaches new instances; the ones running upgrade through the agent.
          upgradePolicy: { mode: "Manual" },
          overprovision: false,
          // One placement group holds at most 100 machines. Azure turns a scale set from one to
          // several placement groups but never back, so this is set once a pool outgrows it.
          ...(pool.count > SINGLE_PLACEMENT_GROUP_LIMIT ? { singlePlacementGroup: false } : {}),
          tags,
          virtualMachineProfile: {
            userData,
            osProfile: {
              computerNamePrefix: prefix,
              adminUsername: pool.adminUsername,
              adminPassword: pulumi.secret(args.adminPassword),
              windowsConfiguration,
            },
            storageProfile: { imageReference: image, osDisk },
            networkProfile: {
              networkInterfaceConfigurations: [
                {
                  name: `${name}-nic`,
                  primary: true,
                  ipConfigurations: [
                    {
                      name: "primary",
                      subnet: { id: pool.subnetId },
                      ...(pool.publicIp ? { publicIPAddressConfiguration: { name: "public" } } : {}),
                    },
                  ],
                },
              ],
            },
            // In the model, so every instance is born with it (see the top of this file).
            extensionProfile: {
              extensions: [
                {
                  ...CSE,
                  name: BOOTSTRAP_EXTENSION,
                  forceUpdateTag: epoch,
                  settings: {},
                  protectedSettings,
                },
              ],
            },
          },
        },
        keepPassword("virtualMachineProfile.osProfile.adminPassword"),
      );
      this.nodeNames = [`${prefix}*`];
    } else {
      this.nodeNames = computerNames(args.stack, pool.name, pool.count);
      const extensions: pulumi.Resource[] = [];
      this.nodeNames.forEach((computerName, i) => {
        // Batches: machine i waits for the bootstrap of machine i - batch, so a change that touches running machines
        // (a bootstrap that does something new, an image that replaces them) takes at most `batch` at once.
        const before = extensions[i - pool.batch];
        const batchOpts = before ? { dependsOn: [before] } : {};
        const ip = pool.publicIp
          ? new azure.network.PublicIPAddress(
              `${name}-${i + 1}-ip`,
              {
                resourceGroupName: pool.resourceGroup,
                location: pool.location,
                sku: { name: "Standard" },
                publicIPAllocationMethod: "Static",
                tags,
              },
              { parent: this },
            )
          : undefined;
        const nic = new azure.network.NetworkInterface(
          `${name}-${i + 1}-nic`,
          {
            resourceGroupName: pool.resourceGroup,
            location: pool.location,
            tags,
            ipConfigurations: [
              {
                name: "primary",
                subnet: { id: pool.subnetId },
                privateIPAllocationMethod: "Dynamic",
                ...(ip ? { publicIPAddress: { id: ip.id } } : {}),
              },
            ],
          },
          { parent: this },
        );
        const vm = new azure.compute.VirtualMachine(
          `${name}-${i + 1}`,
          {
            resourceGroupName: pool.resourceGroup,
            location: pool.location,
            vmName: computerName,
            identity,
            hardwareProfile: { vmSize: pool.vmSize },
            userData,
            tags,
            osProfile: {
              computerName,
              adminUsername: pool.adminUsername,
              adminPassword: pulumi.secret(args.adminPassword),
              windowsConfiguration,
            },
            storageProfile: { imageReference: image, osDisk: { ...osDisk, deleteOption: "Delete" } },
            networkProfile: { networkInterfaces: [{ id: nic.id, primary: true }] },
          },
          {
            ...keepPassword("osProfile.adminPassword"),
            dependsOn: [...dependsOnList(machineOpts.dependsOn), ...(before ? [before] : [])],
          },
        );
        const extension = new azure.compute.VirtualMachineExtension(
          `${name}-${i + 1}-bootstrap`,
          {
            ...CSE,
            resourceGroupName: pool.resourceGroup,
            location: pool.location,
            vmName: vm.name,
            vmExtensionName: BOOTSTRAP_EXTENSION,
            forceUpdateTag: epoch,
            settings: {},
            protectedSettings: args.join.secretsFor
              ? settingsWith(splitSecrets(args.join.secretsFor(computerName)).inline)
              : protectedSettings,
          },
          { parent: this, ...batchOpts },
        );
        // Sets the password the stack holds; its protected settings change, and it runs again, when that does.
        // After the bootstrap's: Azure runs one extension operation on a machine at a time.
        new azure.compute.VirtualMachineExtension(
          `${name}-${i + 1}-password`,
          {
            ...VM_ACCESS,
            resourceGroupName: pool.resourceGroup,
            location: pool.location,
            vmName: vm.name,
            vmExtensionName: PASSWORD_EXTENSION,
            settings: { UserName: pool.adminUsername },
            protectedSettings: pulumi.secret(pulumi.output(args.adminPassword).apply((Password) => ({ Password }))),
          },
          { parent: this, dependsOn: [extension] },
        );
        extensions.push(extension);
      });
    }
    this.registerOutputs({ nodeNames: this.nodeNames, bootstrapHash: this.bootstrapHash, contentUrl: this.contentUrl });
  }
}
