/**
 * Real external tools the tests drive (CoreOS Ignition, pwsh, Chromium). Outside
 * CI a missing tool skips the tests that need it, saying what was skipped and
 * how to install it; in CI (CI=true) a missing tool fails the run.
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** A tool a test needs. */
export interface Tool {
  readonly name: string;
  /** Absolute path, or a bare command looked up on PATH. */
  readonly command: string;
  readonly install: string;
}

export const IGNITION: Tool = {
  name: "CoreOS Ignition",
  command: "/usr/lib/dracut/modules.d/30ignition/ignition",
  install: "npm run setup (installs the Debian package `ignition`)",
};
export const IGNITION_VALIDATE: Tool = { ...IGNITION, name: "ignition-validate", command: "/usr/bin/ignition-validate" };

/** The resolved path of a tool, or undefined when it is not installed. */
export function locate(tool: Tool): string | undefined {
  const candidates = tool.command.includes("/")
    ? [tool.command]
    : (process.env.PATH ?? "").split(delimiter).map((d) => join(d, tool.command));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here; try the next
    }
  }
  return undefined;
}

/**
 * `false` when every tool is present, otherwise a skip reason. In CI a missing
 * tool throws, so the test file fails instead of silently checking nothing.
 */
export function skipUnlessInstalled(...tools: Tool[]): string | false {
  const missing = tools.filter((t) => locate(t) === undefined);
  if (missing.length === 0) return false;
  const reason = missing.map((t) => `${t.name} (${t.command}) is not installed; install with: ${t.install}`).join("; ");
  if (process.env.CI === "true") throw new Error(`CI requires ${reason}`);
  process.stderr.write(`SKIPPED: ${reason}\n`);
  return reason;
}
