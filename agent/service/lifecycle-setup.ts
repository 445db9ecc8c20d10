/**
 * Turning a lifecycle command's options (and an optional agent config) into
 * the engine's dependencies: the real shells, the platform's reboot executor,
 * the lock's process probe, the root and the values commands get. The command
 * lines and `serve` share it, so a node converges the same way from either.
 */
import { hostname } from "node:os";
import { resolve } from "node:path";
import { linuxProcessHost, windowsProcessHost } from "../broker";
import { AgentError, AgentErrorCode, baseEnvironment, createLogger } from "../common";
import type { ShellKind } from "../content";
import { rootedMapper } from "../ignition";
import {
  windowsServiceProbe,
  WITHHELD,
  type EngineDeps,
  type LifecycleObserver,
  type RebootExecutor,
  exitRebootExecutor,
  windowsRebootExecutor,
} from "../lifecycle";
import { type AllowedDowngrade, checkRelease, recordRelease, verifyBundle } from "../release";
import { type AgentConfig, loadAgentConfig } from "./config";
import { type LifecycleOptions, readKey, rootOf } from "./options";
import { PowerShellSession, ShSession, type Shell } from "../shell";

function parseVars(pairs: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf("=");
    const name = i > 0 ? p.slice(0, i) : "";
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new AgentError(
        AgentErrorCode.InvalidInput,
        `--var ${p}: expected NAME=VALUE with NAME an environment variable name`,
      );
    out[name] = p.slice(i + 1);
  }
  return out;
}

/** What a lifecycle command resolved its options to. */
export interface Resolved {
  readonly root: string;
  readonly config: AgentConfig | undefined;
  readonly content: string | undefined;
  readonly template: string | undefined;
  readonly templateVersion: string | undefined;
  readonly deps: (observer: LifecycleObserver, command: string, signal?: AbortSignal) => EngineDeps;
}

/** Resolves options, reading the agent config when one is named. */
export async function resolveOptions(opts: LifecycleOptions): Promise<Resolved> {
  return resolveWith(opts.config ? await loadAgentConfig(opts.config) : undefined, opts);
}

/** Resolves an agent config (and any command-line overrides). */
export function resolveWith(config: AgentConfig | undefined, opts: LifecycleOptions = {}): Resolved {
  let template = opts.template ?? config?.template;
  let templateVersion = opts.templateVersion ?? (opts.template ? undefined : config?.templateVersion);
  if (template?.includes("@")) [template, templateVersion] = template.split("@", 2) as [string, string];
  const root = rootOf(opts, config);
  const nodeName = opts.nodeName ?? config?.nodeName ?? hostname();
  const kubeconfig = opts.kubeconfig ?? config?.kubeconfig;
  const variables = { ...(config?.variables ?? {}), ...parseVars(opts.var ?? []) };
  const secrets = config?.secrets ?? {};
  const reboot = rebootExecutor(config?.reboot);
  // Commands get a minimal environment plus their step's values, never the agent's own (a SAS token, say).
  const baseEnv = baseEnvironment(process.env, process.platform);
  for (const name of WITHHELD) delete baseEnv[name];
  const shell = (kind: ShellKind): Shell =>
    kind === "sh" ? new ShSession({ env: baseEnv, cwd: root }) : new PowerShellSession({ env: baseEnv, cwd: root });
  const probe = process.platform === "win32" ? windowsProcessHost : linuxProcessHost;
  const publicKey = opts.publicKey !== undefined ? readKey(opts.publicKey) : config?.publicKey;
  const allowDowngrade = opts.allowDowngrade === true || config?.allowDowngrade === true;
  // With a pinned key, content is verified before anything is read from it, so a refused bundle changes nothing;
  // `plan` checks the version like the rest but records nothing, as it changes nothing.
  const verifyContent =
    publicKey === undefined
      ? undefined
      : (observer: LifecycleObserver, command: string) =>
          async (dir: string): Promise<Readonly<Record<string, string>>> => {
            const verified = await verifyBundle(dir, publicKey);
            const downgrade = await checkRelease(root, "content", dir, verified, allowDowngrade);
            if (downgrade !== undefined) reportDowngrade(downgrade, dir, observer);
            if (!command.endsWith(" plan")) await recordRelease(root, "content", verified, downgrade !== undefined);
            return verified.digests;
          };
  return {
    root,
    config,
    content: opts.content ? resolve(opts.content) : config?.content,
    template,
    templateVersion,
    deps: (observer, command, signal) => ({
      root,
      mapper: rootedMapper(root),
      facts: { root, nodeName, ...(kubeconfig ? { kubeconfig: resolve(kubeconfig) } : {}) },
      secrets,
      variables,
      shell,
      reboot,
      observer,
      probe,
      command,
      ...(verifyContent ? { verifyContent: verifyContent(observer, command) } : {}),
      ...(process.platform === "win32" ? { services: windowsServiceProbe } : {}),
      ...(signal ? { signal } : {}),
    }),
  };
}

/** Logs an allowed downgrade and reports it to `observer`, which makes it an Event where a reporter listens. */
export function reportDowngrade(d: AllowedDowngrade, dir: string, observer?: LifecycleObserver): void {
  createLogger("anti-rollback").warn("downgrade allowed", {
    kind: d.kind,
    bundle: dir,
    from: d.from,
    to: d.to ?? "(unversioned)",
    key: d.keyId,
  });
  observer?.event({
    type: "downgrade-allowed",
    at: new Date().toISOString(),
    kind: d.kind,
    keyId: d.keyId,
    from: d.from,
    to: d.to,
  });
}

/** The reboot executor a config asks for, or this platform's. */
export function rebootExecutor(
  kind: AgentConfig["reboot"],
  platform: NodeJS.Platform = process.platform,
): RebootExecutor {
  return (kind ?? (platform === "win32" ? "windows" : "exit")) === "windows"
    ? windowsRebootExecutor
    : exitRebootExecutor;
}
