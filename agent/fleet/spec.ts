/**
 * The local fleet's desired state, as read from a stack's `local` pool, and
 * each sandbox host's agent config rendered from it (pure and deterministic:
 * the same spec and host always give the same bytes).
 */
import { existsSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { type DrainSettings, canonicalJson } from "../common";
import { localHostNames } from "../../components";

/** What the fleet should run. */
export interface FleetSpec {
  /** The stack's name and file, for messages. */
  readonly stack: string;
  readonly stackFile: string;
  /** The local pool's name: hosts are `<pool>-1`, `<pool>-2`… */
  readonly pool: string;
  readonly hosts: number;
  readonly maxUnavailable: number;
  /** The content source tree (built by the fleet into a bundle). */
  readonly content: string;
  readonly template: string;
  readonly templateVersion: string;
  /** Whether the hosts join a local control plane the fleet runs. */
  readonly cluster?: boolean;
  /** The pool's drain knobs (cluster mode drains a node before a disruptive step). */
  readonly drain?: DrainSettings;
}

/** The target a host converges to. */
export interface HostTarget {
  /** The built content bundle. */
  readonly content: string;
  readonly template: string;
  readonly templateVersion: string;
}

/** Paths of one sandbox host under the fleet's state directory. */
export interface HostPaths {
  readonly dir: string;
  readonly root: string;
  readonly config: string;
  readonly log: string;
  readonly broker: string;
  readonly proxy: string;
}

/** Host names of a spec, in order (the stack's program declares the same, and a join token for each). */
export function hostNames(pool: string, count: number): string[] {
  return localHostNames(pool, count);
}

/** Where a host lives. */
export function hostPaths(stateDir: string, host: string): HostPaths {
  const dir = join(stateDir, "hosts", host);
  return {
    dir,
    root: join(dir, "root"),
    config: join(dir, "agent.json"),
    log: join(dir, "agent.log"),
    broker: join(dir, "broker.sock"),
    proxy: join(dir, "proxy.sock"),
  };
}

/**
 * Binaries a container may start through a sandbox host's broker: a few
 * harmless tools and Node itself, each only if it is a real file (the broker
 * refuses any path with a symbolic link along it).
 */
export function sandboxWhitelist(
  candidates: readonly string[] = [
    process.execPath,
    "/usr/bin/uname",
    "/usr/bin/hostname",
    "/usr/bin/echo",
    "/usr/bin/cat",
    "/usr/bin/sleep",
    "/usr/bin/env",
    "/usr/bin/dash",
  ],
): string[] {
  return candidates.filter((p) => {
    if (!existsSync(p)) return false;
    let dir = p;
    while (dir !== "/" && dir !== ".") {
      if (lstatSync(dir).isSymbolicLink()) return false;
      dir = join(dir, "..");
    }
    return true;
  });
}

/**
 * The agent config of one sandbox host (JSON text); with the node's kubeconfig (cluster mode) it reports to its Node.
 */
export function renderHostConfig(
  host: string,
  paths: HostPaths,
  target: HostTarget,
  whitelist: readonly string[],
  kubeconfig?: string,
  drain?: DrainSettings,
): string {
  return `${canonicalJson({
    nodeName: host,
    ...(kubeconfig !== undefined ? { kubeconfig } : {}),
    ...(drain !== undefined ? { drain } : {}),
    root: paths.root,
    content: target.content,
    template: target.template,
    templateVersion: target.templateVersion,
    verifyIntervalSeconds: 30,
    autoCorrect: true,
    reboot: "exit",
    broker: { listen: paths.broker, proxy: paths.proxy, white_list: { processPaths: [...whitelist], proxyPorts: [] } },
  })}\n`;
}
