/**
 * zod schemas for Ignition spec 3.0.0–3.4.0, written to accept exactly what Go's
 * `encoding/json` accepts into Ignition's types: every field may be absent or
 * `null` (both mean "unset"), wrong JSON types are errors, unknown keys are not
 * (they are reported as warnings by {@link findUnusedKeys}).
 */
import { z } from "zod";

const str = z.string().nullish();
const int = z.number().int().nullish();
const bool = z.boolean().nullish();
const list = <T extends z.ZodType>(item: T) => z.array(item).nullish();
const strs = list(z.string().nullable());

/** A resource: file contents, an append fragment, a merged config, a CA. */
export const resourceV3 = z.object({
  source: str,
  compression: str,
  httpHeaders: list(z.object({ name: str, value: str }).nullable()),
  verification: z.object({ hash: str }).nullish(),
});

const owner = z.object({ id: int, name: str }).nullish();
const node = { path: str, overwrite: bool, user: owner, group: owner };

/** `storage.files[]`. */
export const fileV3 = z.object({
  ...node,
  contents: resourceV3.nullish(),
  append: list(resourceV3.nullable()),
  mode: int,
});
/** `storage.directories[]`. */
export const directoryV3 = z.object({ ...node, mode: int });
/** `storage.links[]`. */
export const linkV3 = z.object({ ...node, target: str, hard: bool });

const partition = z.object({
  label: str,
  number: int,
  sizeMiB: int,
  startMiB: int,
  typeGuid: str,
  guid: str,
  wipePartitionEntry: bool,
  shouldExist: bool,
  resize: bool,
});
const tang = z.object({ url: str, thumbprint: str, advertisement: str });

/** The whole 3.x document. */
export const configV3 = z.object({
  ignition: z
    .object({
      version: str,
      config: z.object({ merge: list(resourceV3.nullable()), replace: resourceV3.nullish() }).nullish(),
      timeouts: z.object({ httpResponseHeaders: int, httpTotal: int }).nullish(),
      security: z
        .object({ tls: z.object({ certificateAuthorities: list(resourceV3.nullable()) }).nullish() })
        .nullish(),
      proxy: z.object({ httpProxy: str, httpsProxy: str, noProxy: strs }).nullish(),
    })
    .nullish(),
  storage: z
    .object({
      files: list(fileV3.nullable()),
      directories: list(directoryV3.nullable()),
      links: list(linkV3.nullable()),
      disks: list(z.object({ device: str, wipeTable: bool, partitions: list(partition.nullable()) }).nullable()),
      raid: list(z.object({ name: str, level: str, devices: strs, spares: int, options: strs }).nullable()),
      filesystems: list(
        z
          .object({
            device: str,
            format: str,
            wipeFilesystem: bool,
            label: str,
            uuid: str,
            options: strs,
            path: str,
            mountOptions: strs,
          })
          .nullable(),
      ),
      luks: list(
        z
          .object({
            name: str,
            device: str,
            keyFile: resourceV3.nullish(),
            label: str,
            uuid: str,
            options: strs,
            wipeVolume: bool,
            discard: bool,
            openOptions: strs,
            clevis: z
              .object({
                tang: list(tang.nullable()),
                tpm2: bool,
                threshold: int,
                custom: z.object({ config: str, needsNetwork: bool, pin: str }).nullish(),
              })
              .nullish(),
          })
          .nullable(),
      ),
    })
    .nullish(),
  systemd: z
    .object({
      units: list(
        z
          .object({
            name: str,
            enabled: bool,
            mask: bool,
            contents: str,
            dropins: list(z.object({ name: str, contents: str }).nullable()),
          })
          .nullable(),
      ),
    })
    .nullish(),
  passwd: z
    .object({
      users: list(
        z
          .object({
            name: str,
            passwordHash: str,
            sshAuthorizedKeys: strs,
            uid: int,
            gecos: str,
            homeDir: str,
            noCreateHome: bool,
            primaryGroup: str,
            groups: strs,
            noUserGroup: bool,
            noLogInit: bool,
            shell: str,
            system: bool,
            shouldExist: bool,
          })
          .nullable(),
      ),
      groups: list(z.object({ name: str, gid: int, passwordHash: str, system: bool, shouldExist: bool }).nullable()),
    })
    .nullish(),
  kernelArguments: z.object({ shouldExist: strs, shouldNotExist: strs }).nullish(),
});

/** The typed shape of a 3.x document. */
export type ConfigV3 = z.infer<typeof configV3>;

/**
 * Keys each minor version added. A key from a later minor is an unused key in an
 * earlier one (Ignition warns and ignores it), never an error.
 */
export const addedInV3Minor: Readonly<Record<string, number>> = {
  "storage.files.contents.httpHeaders": 1,
  "storage.files.append.httpHeaders": 1,
  "ignition.config.merge.httpHeaders": 1,
  "ignition.config.replace.httpHeaders": 1,
  "ignition.security.tls.certificateAuthorities.httpHeaders": 1,
  "storage.luks.keyFile.httpHeaders": 1,
  "storage.luks": 2,
  "passwd.users.shouldExist": 2,
  "passwd.groups.shouldExist": 2,
  "storage.disks.partitions.resize": 2,
  kernelArguments: 3,
  "storage.luks.clevis.custom": 3,
  "storage.luks.discard": 4,
  "storage.luks.openOptions": 4,
};
