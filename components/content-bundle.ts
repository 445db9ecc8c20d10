/**
 * `ContentBundle`: builds the stack's content into a bundle, archives it
 * deterministically and publishes it where nodes read it — an Azure blob
 * (read with the pool's managed identity, or a SAS that only ever travels as a
 * protected setting) or a ConfigMap (small bundles, read by the upgrader pods
 * and carried to BYO hosts over SSH). Exposes the URL and SHA-256 the
 * bootstrap pins.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as azure from "@pulumi/azure-native";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { buildContent } from "../agent/content/build";
import type { FleetConfig } from "../infra/config";
import { archiveDirectory } from "./content-archive";

/** Where and how the bundle is published (the stack's `content.publish`). */
export type PublishArgs = FleetConfig["content"]["publish"];

/** Arguments of {@link ContentBundle}. */
export interface ContentBundleArgs {
  /** The content source tree. */
  readonly contentDir: string;
  readonly publish: PublishArgs;
  /** Namespace for the ConfigMap form. */
  readonly namespace: string;
  /** Where archives are written. @default ".winfleet/build" under the working directory */
  readonly workDir?: string;
  /** When a SAS expires (`auth: sas`). */
  readonly sasExpiry?: string;
}

/** A ConfigMap holds at most 1 MiB. */
export const CONFIGMAP_LIMIT = 1024 * 1024;

interface Built {
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
}

/** Builds and archives `contentDir` into `workDir/content-<sha>.tgz`. */
export async function buildArchive(contentDir: string, workDir: string): Promise<Built & { readonly data: Buffer }> {
  await mkdir(workDir, { recursive: true });
  const staging = await mkdtemp(join(workDir, ".bundle-"));
  try {
    await buildContent(contentDir, join(staging, "bundle"));
    const archive = await archiveDirectory(join(staging, "bundle"));
    const path = join(workDir, `content-${archive.sha256.slice(0, 16)}.tgz`);
    await writeFile(path, archive.data);
    return { path, sha256: archive.sha256, size: archive.data.length, data: archive.data };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The published content bundle. */
export class ContentBundle extends pulumi.ComponentResource {
  /** SHA-256 of the archive. */
  readonly sha256: pulumi.Output<string>;
  /** The archive on this machine (copied to BYO hosts). */
  readonly archivePath: pulumi.Output<string>;
  /** Where nodes download it (blob), or `configmap://<namespace>/<name>`. */
  readonly url: pulumi.Output<string>;
  /** How nodes authenticate to `url`. */
  readonly auth: "none" | "managedIdentity" | "sas";
  /** The read-only SAS (a secret), when `auth` is `sas`. */
  readonly sas?: pulumi.Output<string>;
  /** The storage account's resource id, for role assignments (blob). */
  readonly storageAccountId?: string;

  constructor(name: string, args: ContentBundleArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:ContentBundle", name, {}, opts);
    const built = pulumi.output(buildArchive(args.contentDir, args.workDir ?? join(process.cwd(), ".winfleet", "build")));
    this.sha256 = built.sha256;
    this.archivePath = built.path;
    const p = args.publish;
    if (p.to === "blob") {
      const container = new azure.storage.BlobContainer(`${name}-container`, { accountName: p.storageAccount, resourceGroupName: p.resourceGroup, containerName: p.container, publicAccess: "None" }, { parent: this });
      const blobName = built.sha256.apply((s) => `content-${s.slice(0, 16)}.tgz`);
      new azure.storage.Blob(
        `${name}-blob`,
        { accountName: p.storageAccount, resourceGroupName: p.resourceGroup, containerName: container.name, blobName, type: "Block", contentType: "application/gzip", source: built.path.apply((f) => new pulumi.asset.FileAsset(f)) },
        { parent: this },
      );
      this.url = pulumi.interpolate`https://${p.storageAccount}.blob.core.windows.net/${p.container}/${blobName}`;
      this.auth = p.auth;
      if (p.auth === "sas") {
        if (!args.sasExpiry) throw new pulumi.ResourceError("content.publish.auth is sas, so a SAS expiry is required", this);
        const sas = azure.storage.listStorageAccountServiceSASOutput(
          {
            accountName: p.storageAccount,
            resourceGroupName: p.resourceGroup,
            canonicalizedResource: pulumi.interpolate`/blob/${p.storageAccount}/${p.container}/${blobName}`,
            resource: "b",
            permissions: "r",
            protocols: "https",
            sharedAccessExpiryTime: args.sasExpiry,
          },
          { parent: this },
        );
        this.sas = pulumi.secret(sas.serviceSasToken);
      }
    } else {
      const configMapName = built.sha256.apply((s) => `winfleet-content-${s.slice(0, 16)}`);
      new k8s.core.v1.ConfigMap(
        `${name}-configmap`,
        {
          metadata: { name: configMapName, namespace: args.namespace, labels: { "app.kubernetes.io/part-of": "winfleet", "winfleet.io/content": "bundle" } },
          binaryData: built.apply((b) => {
            if (b.size > CONFIGMAP_LIMIT) throw new pulumi.ResourceError(`the content bundle is ${b.size} bytes, more than a ConfigMap holds (${CONFIGMAP_LIMIT}); publish it to blob storage`, this);
            return { "bundle.tgz": b.data.toString("base64") };
          }),
        },
        { parent: this },
      );
      this.url = pulumi.interpolate`configmap://${args.namespace}/${configMapName}`;
      this.auth = "none";
    }
    this.registerOutputs({ sha256: this.sha256, url: this.url });
  }
}

/** The resource id of a storage account, from the subscription and its resource group. */
export function storageAccountId(subscription: string, resourceGroup: string, account: string): string {
  return `/subscriptions/${subscription}/resourceGroups/${resourceGroup}/providers/Microsoft.Storage/storageAccounts/${account}`;
}
