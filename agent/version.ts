/**
 * The agent's version, reported by `--version`, the wins `ApplicationService.Info`
 * RPC and the status table. It is read from the package.json of the bundle the
 * code runs from, so a self-upgrade that switches bundles switches versions.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

function bundleVersion(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "winfleet" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not here; look further up
    }
  }
  return "0.0.0-unknown";
}

/** The running agent's version. */
export const AGENT_VERSION = bundleVersion();
