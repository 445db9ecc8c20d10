/**
 * zod schema for Ignition spec 2.2.0 (the format existing winfleet content uses),
 * with Go's JSON semantics: absent and `null` both mean unset.
 */
import { z } from "zod";

const str = z.string().nullish();
const int = z.number().int().nullish();
const bool = z.boolean().nullish();
const list = <T extends z.ZodType>(item: T) => z.array(item).nullish();
const strs = list(z.string().nullable());

const verifiable = z.object({ source: str, verification: z.object({ hash: str }).nullish() });
const owner = z.object({ id: int, name: str }).nullish();
const node = { filesystem: str, path: str, user: owner, group: owner, overwrite: bool };

/** `storage.files[]` in 2.2: `append` is a boolean, contents has no httpHeaders. */
export const fileV2 = z.object({
  ...node,
  append: bool,
  contents: z.object({ compression: str, source: str, verification: z.object({ hash: str }).nullish() }).nullish(),
  mode: int,
});

/** The whole 2.2 document. */
export const configV2 = z.object({
  ignition: z
    .object({
      version: str,
      config: z.object({ append: list(verifiable.nullable()), replace: verifiable.nullish() }).nullish(),
      timeouts: z.object({ httpResponseHeaders: int, httpTotal: int }).nullish(),
      security: z
        .object({ tls: z.object({ certificateAuthorities: list(verifiable.nullable()) }).nullish() })
        .nullish(),
    })
    .nullish(),
  storage: z
    .object({
      disks: list(
        z
          .object({
            device: str,
            wipeTable: bool,
            partitions: list(
              z.object({ label: str, number: int, size: int, start: int, typeGuid: str, guid: str }).nullable(),
            ),
          })
          .nullable(),
      ),
      raid: list(z.object({ name: str, level: str, devices: strs, spares: int, options: strs }).nullable()),
      filesystems: list(
        z
          .object({
            name: str,
            mount: z
              .object({
                device: str,
                format: str,
                wipeFilesystem: bool,
                label: str,
                uuid: str,
                options: strs,
                create: z.object({ force: bool, options: strs }).nullish(),
              })
              .nullish(),
            path: str,
          })
          .nullable(),
      ),
      files: list(fileV2.nullable()),
      directories: list(z.object({ ...node, mode: int }).nullable()),
      links: list(z.object({ ...node, target: str, hard: bool }).nullable()),
    })
    .nullish(),
  systemd: z
    .object({
      units: list(
        z
          .object({
            name: str,
            enable: bool,
            enabled: bool,
            mask: bool,
            contents: str,
            dropins: list(z.object({ name: str, contents: str }).nullable()),
          })
          .nullable(),
      ),
    })
    .nullish(),
  networkd: z.object({ units: list(z.object({ name: str, contents: str }).nullable()) }).nullish(),
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
            create: z.record(z.string(), z.unknown()).nullish(),
          })
          .nullable(),
      ),
      groups: list(z.object({ name: str, gid: int, passwordHash: str, system: bool }).nullable()),
    })
    .nullish(),
});

/** The typed shape of a 2.2 document. */
export type ConfigV2 = z.infer<typeof configV2>;
