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
import { buildContent } from "../agent/content";
import { archiveDirectory } from "./content-archive";
import { CONTENT_SAS_SECRET } from "./upgrader-render";

/** Where and how the bundle is published. */
export type PublishArgs =
  /** A ConfigMap in {@link ContentBundleArgs.namespace} (bundles up to 1 MiB). */
  | { readonly to: "configMap" }
  | {
      readonly to: "blob";
      /** The storage account (which must exist) and its resource group. */
      readonly resourceGroup: string;
      readonly storageAccount: string;
      /** The container winfleet creates for the bundle. */
      readonly container: string;
      /** How nodes read it: their pool's managed identity, or a read-only SAS of the blob. */
      readonly auth: "managedIdentity" | "sas";
      /** When the SAS expires (ISO 8601), required with `auth: sas`. */
      readonly sasExpiry?: string | undefined;
    };

/** Arguments of {@link ContentBundle}. */
export interface ContentBundleArgs {
  /**
   * The built archive ({@link buildArchive}): built before the resources, so its digest is known while they are
   * declared.
   */
  readonly archive: BuiltArchive;
  readonly publish: PublishArgs;
  /** Namespace for the ConfigMap form. */
  readonly namespace: string;
}

/** A ConfigMap holds at most 1 MiB. */
export const CONFIGMAP_LIMIT = 1024 * 1024;

/** A built content archive. */
export interface BuiltArchive {
  readonly path: string;
  readonly sha256: string;
  readonly size: number;
  readonly data: Buffer;
  /** The templates the bundle holds. */
  readonly templates: readonly { readonly name: string; readonly version: string }[];
}

/** Builds and archives `contentDir` into `workDir/content-<sha>.tgz`. */
export async function buildArchive(contentDir: string, workDir: string): Promise<BuiltArchive> {
  await mkdir(workDir, { recursive: true });
  const staging = await mkdtemp(join(workDir, ".bundle-"));
  try {
    const manifest = await buildContent(contentDir, join(staging, "bundle"));
    const archive = await archiveDirectory(join(staging, "bundle"));
    const path = join(workDir, `content-${archive.sha256.slice(0, 16)}.tgz`);
    await writeFile(path, archive.data);
    return {
      path,
      sha256: archive.sha256,
      size: archive.data.length,
      data: archive.data,
      templates: manifest.templates.map((t) => ({ name: t.name, version: t.version })),
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The published content bundle. */
export class ContentBundle extends pulumi.ComponentResource {
  /** SHA-256 of the archive. */
  readonly sha256: string;
  /** The archive on this machine (copied to BYO hosts). */
  readonly archivePath: string;
  /** Where nodes download it (blob), or `configmap://<namespace>/<name>`. */
  readonly url: string;
  /** The ConfigMap holding it as `bundle.tgz` (the ConfigMap form). */
  readonly configMap?: string;
  /** How nodes authenticate to `url`. */
  readonly auth: "none" | "managedIdentity" | "sas";
  /** The read-only SAS (a secret), when `auth` is `sas`. */
  readonly sas?: pulumi.Output<string>;

  constructor(name: string, args: ContentBundleArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:ContentBundle", name, {}, opts);
    const { archive } = args;
    this.sha256 = archive.sha256;
    this.archivePath = archive.path;
    const p = args.publish;
    const short = archive.sha256.slice(0, 16);
    if (p.to === "blob") {
      const container = new azure.storage.BlobContainer(
        `${name}-container`,
        {
          accountName: p.storageAccount,
          resourceGroupName: p.resourceGroup,
          containerName: p.container,
          publicAccess: "None",
        },
        { parent: this },
      );
      const blobName = `content-${short}.tgz`;
      new azure.storage.Blob(
        `${name}-blob`,
        {
          accountName: p.storageAccount,
          resourceGroupName: p.resourceGroup,
          containerName: container.name,
          blobName,
          type: "Block",
          contentType: "application/gzip",
          source: new pulumi.asset.FileAsset(archive.path),
        },
        { parent: this },
      );
      this.url = `https://${p.storageAccount}.blob.core.windows.net/${p.container}/${blobName}`;
      this.auth = p.auth;
      if (p.auth === "sas") {
        if (!p.sasExpiry)
          throw new pulumi.ResourceError("content.publish.auth is sas, so content.publish.sasExpiry is required", this);
        const sas = azure.storage.listStorageAccountServiceSASOutput(
          {
            accountName: p.storageAccount,
            resourceGroupName: p.resourceGroup,
            canonicalizedResource: `/blob/${p.storageAccount}/${p.container}/${blobName}`,
            resource: "b",
            permissions: "r",
            protocols: "https",
            sharedAccessExpiryTime: p.sasExpiry,
          },
          { parent: this },
        );
        this.sas = pulumi.secret(sas.serviceSasToken);
        // The agent upgrader's pods read it from here, never from their spec.
        new k8s.core.v1.Secret(
          `${name}-sas`,
          {
            metadata: {
              name: CONTENT_SAS_SECRET,
              namespace: args.namespace,
              labels: { "app.kubernetes.io/part-of": "winfleet" },
            },
            type: "Opaque",
            stringData: { sas: this.sas },
          },
          { parent: this },
        );
      }
    } else {
      if (archive.size > CONFIGMAP_LIMIT)
        throw new pulumi.ResourceError(
          `the content bundle is ${archive.size} bytes, more than a ConfigMap holds (${CONFIGMAP_LIMIT}); publish it to blob storage`,
          this,
        );
      this.configMap = `winfleet-content-${short}`;
      new k8s.core.v1.ConfigMap(
        `${name}-configmap`,
        {
          metadata: {
            name: this.configMap,
            namespace: args.namespace,
            labels: { "app.kubernetes.io/part-of": "winfleet", "winfleet.io/content": "bundle" },
          },
          binaryData: { "bundle.tgz": archive.data.toString("base64") },
        },
        { parent: this },
      );
      this.url = `configmap://${args.namespace}/${this.configMap}`;
      this.auth = "none";
    }
    this.registerOutputs({ sha256: this.sha256, url: this.url });
  }
}

/** The resource id of a storage account, from the subscription and its resource group. */
export function storageAccountId(subscription: string, resourceGroup: string, account: string): string {
  return `/subscriptions/${subscription}/resourceGroups/${resourceGroup}/providers/Microsoft.Storage/storageAccounts/${account}`;
}
