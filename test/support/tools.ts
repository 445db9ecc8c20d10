/**
 * Real external tools the tests drive (CoreOS Ignition, shellcheck, Chromium,
 * socat, OpenSSH's sshd, the HTTP proxy tinyproxy, the SOCKS5 proxy microsocks,
 * pwsh). Outside CI a missing tool skips the tests that need it, saying what was
 * skipped and how to install it; in CI (CI=true) a missing tool fails the run —
 * except pwsh, which `npm run setup` does not install: its tests run
 * wherever it is on PATH and are skipped, with a line saying so, everywhere else.
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
export const IGNITION_VALIDATE: Tool = {
  ...IGNITION,
  name: "ignition-validate",
  command: "/usr/bin/ignition-validate",
};
export const SHELLCHECK: Tool = {
  name: "shellcheck",
  command: "shellcheck",
  install: "npm run setup (installs the Debian package `shellcheck`)",
};
export const CHROMIUM: Tool = {
  name: "Chromium",
  command: "/usr/bin/chromium",
  install: "npm run setup (installs the Debian package `chromium`)",
};
export const SOCAT: Tool = {
  name: "socat",
  command: "socat",
  install: "npm run setup (installs the Debian package `socat`)",
};
export const TINYPROXY: Tool = {
  name: "tinyproxy",
  command: "tinyproxy",
  install: "npm run setup (installs the Debian package `tinyproxy`)",
};
export const MICROSOCKS: Tool = {
  name: "microsocks",
  command: "microsocks",
  install: "npm run setup (installs the Debian package `microsocks`)",
};
export const SSHD: Tool = {
  name: "OpenSSH server",
  command: "/usr/sbin/sshd",
  install: "npm run setup (installs the Debian package `openssh-server`)",
};
export const PWSH: Tool = {
  name: "PowerShell 7",
  command: "pwsh",
  install: "a PowerShell 7 package for your OS (npm run setup does not install one)",
};

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
  if (process.env.CI === "true" && missing.some((t) => t !== PWSH)) throw new Error(`CI requires ${reason}`);
  process.stderr.write(`SKIPPED: ${reason}\n`);
  return reason;
}
