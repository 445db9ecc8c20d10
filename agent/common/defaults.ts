/**
 * Where winfleet puts things on a host when nobody says otherwise: the
 * install directory, the agent and broker configs, the host root, the
 * directory of the broker's sockets. Defined
 * once here because the bootstrap (components/), the upgrader pods, the CLI
 * defaults and the release's service files must agree on them.
 */
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";

/** Where the bootstrap installs the agent on Windows; also the home of its config, log and service wrapper. */
export const WINDOWS_INSTALL_DIR = "C:\\ProgramData\\winfleet";
/** Where a Linux host installs the agent (the release's systemd unit and `service render`). */
export const LINUX_INSTALL_DIR = "/opt/winfleet";
/** The agent config the bootstrap writes on Windows, beside the service's agent.log. */
export const WINDOWS_AGENT_CONFIG = `${WINDOWS_INSTALL_DIR}\\agent.json`;
/** The agent config the release's systemd unit starts `serve` with. */
export const LINUX_AGENT_CONFIG = "/etc/winfleet/agent.json";
/** The service wrapper `service render` names on Windows. */
export const WINDOWS_NSSM = `${WINDOWS_INSTALL_DIR}\\nssm.exe`;
/** The broker config on Windows: where rancher's wins keeps it, so a host moving from wins keeps its file. */
export const WINDOWS_BROKER_CONFIG = "C:\\etc\\rancher\\wins\\config";
/** The broker config elsewhere. */
export const LINUX_BROKER_CONFIG = "/etc/winfleet/broker.yaml";

/** The install directory on `platform`. */
export function defaultInstallDir(platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? WINDOWS_INSTALL_DIR : LINUX_INSTALL_DIR;
}

/** The broker config on `platform`. */
export function defaultBrokerConfig(platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? WINDOWS_BROKER_CONFIG : LINUX_BROKER_CONFIG;
}

/** The host root (host path of `/`): the system drive's root on Windows, `/` elsewhere. */
export function defaultRoot(platform: NodeJS.Platform = process.platform): string {
  return platform === "win32" ? `${process.env.SystemDrive ?? "C:"}\\` : "/";
}

/**
 * Where relative socket names live on Linux: /run/winfleet for root; for
 * another user their runtime directory, else a directory of their own under
 * the temporary directory (a shared name there could be made first by anyone).
 * The broker refuses any of these it finds owned by someone else.
 */
export function defaultRunDir(
  env: NodeJS.ProcessEnv = process.env,
  uid: number | undefined = process.getuid?.(),
): string {
  if (env.WINFLEET_RUN_DIR) return env.WINFLEET_RUN_DIR;
  if (uid === 0) return "/run/winfleet";
  if (env.XDG_RUNTIME_DIR && isAbsolute(env.XDG_RUNTIME_DIR)) return join(env.XDG_RUNTIME_DIR, "winfleet");
  return join(tmpdir(), `winfleet-${uid ?? "user"}`);
}

/**
 * Node options the agent's service runs with. `--initial-old-space-size=64`: the broker's live heap
 * is about 9 MB, so V8 sets its old generation's limit a few MB above that, and counts the output
 * buffers a `prc run` stream allocates (the pipe's reads, the messages, grpc-js's framed copies)
 * against it as external memory until a scavenge frees them. Streaming output then started a full
 * collection every 10 MB or so; from a 64 MB limit none starts, and the broker's CPU per byte halves
 * (docs/performance.md). V8 reads it only as it starts (not from NODE_OPTIONS, not at run time),
 * and it reserves nothing: idle memory is unchanged.
 */
export const AGENT_NODE_FLAGS: readonly string[] = ["--initial-old-space-size=64"];
