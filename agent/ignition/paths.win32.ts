/**
 * The Windows host mapping: `/a/b` is `C:\a\b` on the system drive, `D:/x` is
 * `D:\x`, and link targets are mapped the same way so they resolve on the host.
 */
import { win32 } from "node:path";
import type { PathMapper } from "./paths";

/** The live Windows mapping for the drive in `%SystemDrive%`. */
export function windowsMapper(systemDrive: string = process.env.SystemDrive ?? "C:"): PathMapper {
  const drive = systemDrive.replace(/:$/, "").toUpperCase();
  const map = (configPath: string): string => {
    const m = /^([A-Z]):(\/.*)$/.exec(configPath);
    if (m) return win32.normalize(`${m[1]}:${m[2]}`);
    return win32.normalize(`${drive}:${configPath}`);
  };
  return { hostPath: map, linkText: (target) => (target.startsWith("/") || /^[A-Z]:\//.test(target) ? map(target) : target.replace(/\//g, "\\")) };
}
