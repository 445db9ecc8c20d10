/**
 * The PowerShell an upgrader pod's init container runs, as pure functions.
 * HostProcess pods run on the host as SYSTEM and call the host's agent
 * directly. wins-mode pods run in an ordinary container: they stage what the
 * host needs (the upgrader executable, the agent bundle, the content archive,
 * the broker config) into host directories mounted into the pod, then ask the
 * host's broker to run the upgrader there (`cli prc run`), so every path
 * handed to the host is a host path.
 */
import { type DrainSettings, WINDOWS_AGENT_CONFIG, WINDOWS_INSTALL_DIR, encodeDrainArgument } from "../agent/common";
import type { AgentTarget } from "./upgrader-render";

/** Where the bootstrap installs the agent on a host. */
export const INSTALL = WINDOWS_INSTALL_DIR;
/** The host's Node runtime and agent entry (what the bootstrap installs). */
export const HOST_NODE = `${INSTALL}\\node\\package\\bin\\node.exe`;
export const HOST_AGENT = `${INSTALL}\\current\\bin\\winfleet-agent.js`;
/** The agent executable and bundle an upgrader image carries. */
export const IMAGE_AGENT = "C:\\winfleet\\winfleet-agent.exe";
export const IMAGE_BUNDLE = "C:\\winfleet\\bundle";
/** The environment variable a content SAS reaches the pod (and the host process) in. */
export const SAS_ENV = "WINFLEET_CONTENT_SAS";
/** Where a wins-mode pod sees the upgrader's host directory and the broker config's. */
export const POD_HOST_DIR = "C:\\host-wins";
export const POD_CONFIG_DIR = "C:\\host-wins-config";

const psq = (s: string): string => `'${s.replace(/'/g, "''")}'`;
const HEAD = "$ErrorActionPreference = 'Stop'";
const CHECK = "if ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE }";

/**
 * `retarget` arguments for a content source, as argv; `archive` is where a ConfigMap's archive is on the host, `drain`
 * the pool's drain knobs (written into the agent config with the target).
 */
export function retargetArgs(t: AgentTarget, archive: string, drain?: DrainSettings): string[] {
  const source =
    "configMap" in t.content
      ? ["--content-archive", archive]
      : t.content.auth === "sas"
        ? ["--content-url", t.content.url, "--content-sas-env", SAS_ENV]
        : ["--content-url", t.content.url, "--content-auth", t.content.auth];
  return [
    "retarget",
    "--config",
    WINDOWS_AGENT_CONFIG,
    "--template",
    t.template,
    "--template-version",
    t.templateVersion,
    "--content-sha256",
    t.contentSha256,
    ...source,
    ...(drain ? ["--drain", encodeDrainArgument(drain)] : []),
  ];
}

/** HostProcess, agent kind: retarget the host's content, then upgrade the agent, both with the host's own agent. */
export function hostProcessAgentScript(
  t: AgentTarget | undefined,
  brokerConfig: string,
  drain?: DrainSettings,
): string {
  const lines = [HEAD, `$node = ${psq(HOST_NODE)}`, `$agent = ${psq(HOST_AGENT)}`];
  if (t) {
    const archive = "$env:CONTAINER_SANDBOX_MOUNT_POINT\\content\\bundle.tgz";
    const args = retargetArgs(t, "ARCHIVE", drain).map((a) => (a === "ARCHIVE" ? `"${archive}"` : psq(a)));
    lines.push(`& $node $agent ${args.join(" ")}`, CHECK);
  }
  // Runs in this container's process, not detached: a HostProcess container's job object ends its children with it.
  // --agent-config: a host whose agent config pins a public key refuses an agent bundle not signed with it.
  lines.push(
    `& $node $agent up --bundle "$env:CONTAINER_SANDBOX_MOUNT_POINT\\winfleet\\bundle" --install-dir ${psq(INSTALL)} --config ${psq(brokerConfig)} --agent-config ${psq(WINDOWS_AGENT_CONFIG)} --manager windows`,
    "exit $LASTEXITCODE",
  );
  return lines.join("\n");
}

/** HostProcess, wins kind: install the group's broker config and make the running broker reload it. */
export function hostProcessWinsScript(configFile: string): string {
  return [
    HEAD,
    `Copy-Item -Force "$env:CONTAINER_SANDBOX_MOUNT_POINT\\config\\config" ${psq(configFile)}`,
    `& ${psq(HOST_NODE)} ${psq(HOST_AGENT)} service reload-config --config ${psq(configFile)}`,
    "exit $LASTEXITCODE",
  ].join("\n");
}

/** The `--args` list a broker splits on spaces (quotes would be kept), so no token may hold either. */
function brokerArgs(argv: readonly string[]): string {
  for (const a of argv) {
    if (a === "" || /[\s"']/.test(a))
      throw new Error(
        `cannot pass ${JSON.stringify(a)} through the broker: its arguments are split on spaces and may not be quoted (check upgrader.pathPrefix and masquerade.as)`,
      );
  }
  return argv.join(" ");
}

/** What a wins-mode script needs to know about the host. */
export interface WinsModeHost {
  /** The upgrader's path on the host (and in the pod, where wins clients check its checksum). */
  readonly upgradeExe: string;
  /** The broker config file on the host. */
  readonly configFile: string;
}

/** wins mode: stage into the mounted host directories, then run the upgrader on the host through the broker. */
export function winsModeScript(
  kind: "agent" | "wins",
  host: WinsModeHost,
  t?: AgentTarget,
  drain?: DrainSettings,
): string {
  const dir = host.upgradeExe.slice(0, host.upgradeExe.lastIndexOf("\\"));
  const leaf = host.upgradeExe.slice(host.upgradeExe.lastIndexOf("\\") + 1);
  const configLeaf = host.configFile.slice(host.configFile.lastIndexOf("\\") + 1);
  const run = (argv: string[], envs = ""): string =>
    `& ${psq(IMAGE_AGENT)} cli prc run --path ${psq(host.upgradeExe)} --args ${psq(brokerArgs(argv))}${envs}`;
  const lines = [
    HEAD,
    // The client sends the checksum of its own copy at the same path; the broker compares the host's.
    `New-Item -ItemType Directory -Force -Path ${psq(dir)} | Out-Null`,
    `Copy-Item -Force ${psq(IMAGE_AGENT)} ${psq(host.upgradeExe)}`,
    `Copy-Item -Force ${psq(IMAGE_AGENT)} ${psq(`${POD_HOST_DIR}\\${leaf}`)}`,
  ];
  if (kind === "wins") {
    lines.push(
      `Copy-Item -Force 'C:\\config\\config' ${psq(`${POD_CONFIG_DIR}\\${configLeaf}`)}`,
      `${run(["service", "reload-config", "--config", host.configFile])}`,
      "exit $LASTEXITCODE",
    );
    return lines.join("\n");
  }
  if (t) {
    const archive = `content-${t.contentSha256.slice(0, 16)}.tgz`;
    if ("configMap" in t.content)
      lines.push(`Copy-Item -Force 'C:\\content\\bundle.tgz' ${psq(`${POD_HOST_DIR}\\${archive}`)}`);
    const sas = !("configMap" in t.content) && t.content.auth === "sas";
    lines.push(
      run(retargetArgs(t, `${dir}\\${archive}`, drain), sas ? ` --envs "${SAS_ENV}=$env:${SAS_ENV}"` : ""),
      CHECK,
    );
  }
  const version = t?.agentVersion ?? "next";
  const bundle = `winfleet-bundle-${version}`;
  lines.push(
    `$bundle = ${psq(`${POD_HOST_DIR}\\${bundle}`)}`,
    "if (Test-Path -LiteralPath $bundle) { Remove-Item -Recurse -Force -LiteralPath $bundle }",
    `Copy-Item -Recurse -Force ${psq(IMAGE_BUNDLE)} $bundle`,
    // Detached: `up` restarts the agent whose broker runs it; readiness then waits for the new version.
    run([
      "up",
      "--bundle",
      `${dir}\\${bundle}`,
      "--install-dir",
      INSTALL,
      "--config",
      host.configFile,
      "--agent-config",
      WINDOWS_AGENT_CONFIG,
      "--manager",
      "windows",
      "--detach",
    ]),
    "exit $LASTEXITCODE",
  );
  return lines.join("\n");
}
