/**
 * `up` as a node runs it: pick the service manager, verify the bundle against
 * the pinned key and the versions accepted before, install it, restart the
 * agent, and record the release only once the new version answers, so a
 * rolled-back upgrade raises nothing.
 */
import { resolve } from "node:path";
import { createLogger, defaultRoot } from "../common";
import { assertAgentVersion, checkRelease, recordRelease, type VerifiedBundle, verifyBundle } from "../release";
import {
  type UpResult,
  installationAt,
  openBundle,
  pidFileManager,
  systemdManager,
  up,
  windowsServiceManager,
} from "../upgrade";
import { loadAgentConfig } from "./config";
import { reportDowngrade } from "./lifecycle-setup";
import { readKey } from "./options";

/** How the agent is restarted: the service managers `up` knows. */
export const SERVICE_MANAGERS = ["systemd", "windows", "pidfile"] as const;

/** What {@link selfUpgrade} is told, as the `up` command names it. */
export interface SelfUpgradeOptions {
  /** The new agent bundle: a directory, or the archive `winfleet release` writes. */
  readonly bundle: string;
  readonly installDir: string;
  /** The broker config the pidfile manager restarts the broker with. */
  readonly brokerConfig: string;
  readonly manager: (typeof SERVICE_MANAGERS)[number];
  readonly timeoutSeconds: number;
  /** A file holding the ed25519 public key the bundle must be signed with; over the agent config's. */
  readonly publicKey?: string;
  /** The agent config to take the pinned key, the root and allowDowngrade from. */
  readonly agentConfig?: string;
  readonly root?: string;
  readonly allowDowngrade?: boolean;
}

/** Upgrades the agent to `opts.bundle`; `probe` asks the running agent its version. */
export async function selfUpgrade(
  opts: SelfUpgradeOptions,
  probe: () => Promise<string | undefined>,
): Promise<UpResult> {
  const installDir = resolve(opts.installDir);
  const manager =
    opts.manager === "pidfile"
      ? pidFileManager(installDir, ["broker", "--config", resolve(opts.brokerConfig)])
      : opts.manager === "windows"
        ? windowsServiceManager()
        : systemdManager();
  const agentConfig = opts.agentConfig !== undefined ? await loadAgentConfig(opts.agentConfig) : undefined;
  const key = opts.publicKey !== undefined ? readKey(opts.publicKey) : agentConfig?.publicKey;
  const root = resolve(opts.root ?? agentConfig?.root ?? defaultRoot());
  const allowDowngrade = opts.allowDowngrade === true || agentConfig?.allowDowngrade === true;
  // Checked against the versions accepted before with the signature, before anything is installed;
  // recorded only once the new agent answers, so a rolled-back upgrade raises nothing.
  let accepted: { release: VerifiedBundle; downgraded: boolean } | undefined;
  const verify =
    key === undefined
      ? undefined
      : async (dir: string): Promise<void> => {
          const verified = await verifyBundle(dir, key);
          await assertAgentVersion(dir, verified);
          const downgrade = await checkRelease(root, "agent", dir, verified, allowDowngrade);
          if (downgrade !== undefined && accepted === undefined) reportDowngrade(downgrade, dir);
          accepted = { release: verified, downgraded: downgrade !== undefined };
        };
  const bundle = await openBundle(resolve(opts.bundle));
  try {
    const result = await up(bundle.dir, {
      ...(verify ? { verify } : {}),
      installation: installationAt(installDir),
      manager,
      probe,
      timeoutMs: opts.timeoutSeconds * 1000,
      log: createLogger("up"),
    });
    if (accepted !== undefined) await recordRelease(root, "agent", accepted.release, accepted.downgraded);
    return result;
  } finally {
    await bundle.done();
  }
}
