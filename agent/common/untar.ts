/**
 * Unpacking a `.tgz` with the system's tar (GNU tar on Linux, bsdtar as
 * `tar.exe` on Windows Server 2019 and later). Both keep members inside the
 * target by default: a leading `/` is dropped and a member naming `..` is
 * refused. What tar is given is checked by its caller (a content archive
 * against its SHA-256 before unpacking; an agent bundle, under a pinned key,
 * against its signature after, which refuses links).
 */
import { spawn } from "node:child_process";
import { AgentError, AgentErrorCode } from "./errors";

/** Unpacks the gzipped tar `archive` into the existing directory `into`. */
export function untar(archive: string, into: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const tar = spawn(process.platform === "win32" ? "tar.exe" : "tar", ["-xzf", archive, "-C", into], {
      stdio: ["ignore", "ignore", "pipe"],
      windowsHide: true,
    });
    let err = "";
    tar.stderr.on("data", (c: Buffer) => (err += c.toString()));
    tar.on("error", (e) => reject(new AgentError(AgentErrorCode.ApplyFailed, `cannot run tar: ${e.message}`)));
    tar.on("close", (code) =>
      code === 0
        ? resolve()
        : reject(
            new AgentError(
              AgentErrorCode.ApplyFailed,
              `tar could not unpack ${archive} (exit ${String(code)}): ${err.trim()}`,
            ),
          ),
    );
  });
}
