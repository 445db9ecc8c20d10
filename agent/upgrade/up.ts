/**
 * `winfleet-agent up`: install a new agent bundle, switch to it, restart the
 * service, and confirm the new version answers; if it does not within the time
 * allowed, switch back, restart again, and say so. The host never stays on a
 * version that does not answer.
 */
import { AgentError, AgentErrorCode, errorMessage, type Logger } from "../common";
import { type Installation, activate, activeVersion, installRelease } from "./installation";
import type { ServiceManager } from "./service-manager";

/** What `up` needs, passed in. */
export interface UpOptions {
  readonly installation: Installation;
  readonly manager: ServiceManager;
  /** The version the running service reports, or undefined when it does not answer. */
  readonly probe: () => Promise<string | undefined>;
  /** How long the new version has to answer. @default 30000 */
  readonly timeoutMs?: number;
  readonly log: Logger;
  /**
   * Checks the bundle before anything is installed, and its staged copy (its signature, when a key is pinned); throws
   * to refuse it.
   */
  readonly verify?: (bundle: string) => Promise<void>;
}

/** The outcome of an upgrade. */
export interface UpResult {
  readonly from: string | undefined;
  readonly to: string;
  readonly outcome: "upgraded" | "unchanged" | "rolled-back";
}

async function answers(probe: () => Promise<string | undefined>, version: string, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const got = await probe().catch(() => undefined);
    if (got === version) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** Upgrades to `bundle`; throws after a rollback so callers exit non-zero. */
export async function up(bundle: string, options: UpOptions): Promise<UpResult> {
  const { installation, manager, probe, log } = options;
  const timeoutMs = options.timeoutMs ?? 30_000;
  // Checked where it lies, to refuse it before anything is written; and again as copied, so a
  // bundle changed after the first check (it may sit where a pod can write) is not installed.
  await options.verify?.(bundle);
  const from = await activeVersion(installation);
  const to = await installRelease(installation, bundle, options.verify);
  if (from === to && (await probe().catch(() => undefined)) === to) {
    log.info("already running this version", { version: to });
    return { from, to, outcome: "unchanged" };
  }
  log.info("switching agent version", { from: from ?? "none", to });
  await activate(installation, to);
  await manager.restart();
  if (await answers(probe, to, timeoutMs)) {
    log.info("upgraded", { from: from ?? "none", to });
    return { from, to, outcome: "upgraded" };
  }
  if (from === undefined) {
    throw new AgentError(
      AgentErrorCode.ApplyFailed,
      `version ${to} did not answer within ${timeoutMs} ms and there is no earlier version to go back to`,
    );
  }
  log.error("new version did not answer; rolling back", { from, to });
  await activate(installation, from);
  try {
    await manager.restart();
  } catch (e) {
    throw new AgentError(
      AgentErrorCode.ApplyFailed,
      `version ${to} did not answer, and restarting ${from} failed: ${errorMessage(e)}`,
    );
  }
  const back = await answers(probe, from, timeoutMs);
  throw new AgentError(
    AgentErrorCode.ApplyFailed,
    back
      ? `version ${to} did not answer within ${timeoutMs} ms; rolled back to ${from}, which answers`
      : `version ${to} did not answer, and neither did ${from} after rolling back`,
  );
}
