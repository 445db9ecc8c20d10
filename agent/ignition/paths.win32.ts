/**
 * The Windows host mapping: `/a/b` is `C:\a\b` on the system drive, `D:/x` is
 * `D:\x`, and link targets are mapped the same way so they resolve on the host.
 *
 * Reading links back: a symbolic link or a junction (a mount-point reparse
 * point, which Node reports as a symbolic link) holds a Win32 path, often in
 * its NT form (`\??\C:\x`). Drive paths map to config paths, relative ones
 * continue from the link's directory, and what names no drive (a network
 * share, a volume by GUID, a device) is refused: no root can contain it.
 */
import { win32 } from "node:path";
import type { HostRef, LinkTarget, PathMapper } from "./paths";
import { splitConfigPath } from "./resolve";

/** Device names Windows reserves in every directory, with or without an extension (`nul.txt` is NUL). */
const RESERVED = /^(?:CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3]|CONIN\$|CONOUT\$)$/i;

/**
 * Why `name` cannot be the name of a file or directory on Windows, or
 * undefined when it can. Ignition's paths are POSIX: a name may hold what
 * Windows reads as a separator (`\`, so `a\..\..\x` would climb out of the
 * root), a drive colon or a stream, end in a dot or a space (which Windows
 * drops, so the name would reach another file), or be a device (writing to
 * `CON` or `nul.txt` writes to the device, and creates no file).
 */
export function windowsNameProblem(name: string): string | undefined {
  // eslint-disable-next-line no-control-regex -- control characters are what Windows refuses in a name
  const bad = /[\\<>:"|?*\u0000-\u001f]/.exec(name);
  if (bad) return `holds ${JSON.stringify(bad[0])}, which Windows does not allow in a name`;
  if (/[. ]$/.test(name)) return "ends in a dot or a space, which Windows drops (the name would reach another file)";
  if (RESERVED.test((name.split(".")[0] ?? "").trimEnd()))
    return "is a device name Windows reserves in every directory (whatever its extension)";
  return undefined;
}

/** Where a Windows link's text leads, in config paths. */
export function windowsLinkTarget(text: string): LinkTarget {
  let t = text.replace(/\//g, "\\");
  // NT object-manager (`\??\`) and Win32 long-path (`\\?\`, `\\.\`) prefixes before a drive letter.
  const prefixed = /^(?:\\\?\?\\|\\\\[?.]\\)(.*)$/.exec(t);
  if (prefixed) {
    const rest = prefixed[1] ?? "";
    if (/^UNC(?:\\|$)/i.test(rest)) return { kind: "refused", reason: "is a network share, outside any root" };
    if (!/^[A-Za-z]:(?:\\|$)/.test(rest))
      return { kind: "refused", reason: "names a volume or device, not a drive path below the root" };
    t = rest;
  }
  if (t.startsWith("\\\\")) return { kind: "refused", reason: "is a network share, outside any root" };
  const drive = /^([A-Za-z]):(.*)$/.exec(t);
  if (drive) {
    const rest = drive[2] ?? "";
    if (rest !== "" && !rest.startsWith("\\"))
      return { kind: "refused", reason: "is relative to a drive's current directory, which a root does not have" };
    return {
      kind: "absolute",
      path: `${(drive[1] ?? "").toUpperCase()}:${rest === "" ? "/" : rest.replace(/\\/g, "/")}`,
    };
  }
  if (t.startsWith("\\")) return { kind: "absolute", path: t.replace(/\\/g, "/"), sameDrive: true };
  return { kind: "relative", path: t.replace(/\\/g, "/") };
}

/** The live Windows mapping for the drive in `%SystemDrive%`. */
export function windowsMapper(systemDrive: string = process.env.SystemDrive ?? "C:"): PathMapper {
  const drive = systemDrive.replace(/:$/, "").toUpperCase();
  const locate = (configPath: string): HostRef => {
    const split = splitConfigPath(configPath);
    return { base: `${split.drive === "" ? `${drive}:` : split.drive}\\`, names: split.names.filter((n) => n !== "") };
  };
  const map = (configPath: string): string => {
    const m = /^([A-Z]):(\/.*)$/.exec(configPath);
    if (m) return win32.normalize(`${m[1]}:${m[2]}`);
    return win32.normalize(`${drive}:${configPath}`);
  };
  return {
    hostPath: map,
    locate,
    linkText: (target) =>
      target.startsWith("/") || /^[A-Z]:\//.test(target) ? map(target) : target.replace(/\//g, "\\"),
    linkTarget: windowsLinkTarget,
  };
}
