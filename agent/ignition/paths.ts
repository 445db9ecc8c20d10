/**
 * Where a config path lands on the host. Ignition paths are POSIX-absolute; on
 * Windows `/` is the system drive and drive paths (`D:/x`) name other volumes.
 * The mapping sits behind {@link PathMapper} so the engine never branches on the OS.
 */
import { join } from "node:path";

/** Maps config paths to host paths. */
export interface PathMapper {
  /** The host path of a config path (`/a/b` or `D:/a/b`). */
  hostPath(configPath: string): string;
  /** The text a symlink to config path `target` must contain on this host. */
  linkText(target: string): string;
}

const DRIVE = /^([A-Z]):(\/.*)$/;

/**
 * Maps everything below `root`: `/a` → `root/a`; a path on the system drive
 * (`C:/a` with the default) maps like `/a`; another drive maps below `root/D:`.
 * Link targets are stored as written, as Ignition does: they resolve once `root`
 * is the host's root.
 */
export function rootedMapper(root: string, systemDrive = "C"): PathMapper {
  return {
    hostPath(configPath) {
      const m = DRIVE.exec(configPath);
      if (!m) return join(root, configPath);
      const [, drive = "", rest = "/"] = m;
      return drive === systemDrive ? join(root, rest) : join(root, `${drive}:`, rest);
    },
    linkText: (target) => target,
  };
}
