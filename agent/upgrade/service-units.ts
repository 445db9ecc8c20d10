/**
 * Service registration, rendered by pure functions: a systemd unit for Linux
 * hosts, and for Windows the PowerShell that registers `winfleet-agent` with
 * failure actions (restart after 5, 10 and 15 s, reset after 300 s, as wins).
 * Node cannot answer the Service Control Manager itself, so on Windows the
 * service runs through a service wrapper (nssm, shipped as a content component).
 */
import { AGENT_NODE_FLAGS } from "../common";

/** Where and how the agent runs. */
export interface ServiceSpec {
  /** The installation directory holding `current/`. */
  readonly installDir: string;
  /** Agent arguments, e.g. `["broker", "--config", "/etc/winfleet/broker.yaml"]`. */
  readonly args: readonly string[];
  /** The Node.js executable. */
  readonly node: string;
}

const systemdQuote = (s: string): string =>
  /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/** The systemd unit (winfleet-agent.service). */
export function renderSystemdUnit(spec: ServiceSpec): string {
  const exec = [spec.node, ...AGENT_NODE_FLAGS, `${spec.installDir}/current/bin/winfleet-agent.js`, ...spec.args]
    .map(systemdQuote)
    .join(" ");
  return [
    "[Unit]",
    "Description=winfleet node agent: lifecycle engine and wins-compatible host-process broker",
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `ExecStart=${exec}`,
    "Environment=WINFLEET_RUN_DIR=/run/winfleet",
    "RuntimeDirectory=winfleet",
    "RuntimeDirectoryMode=0700",
    "StateDirectory=winfleet",
    "UMask=0077",
    "Restart=on-failure",
    "RestartSec=5s",
    "TimeoutStopSec=30s",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}

/** The Windows service's failure actions, in sc.exe's syntax. */
export const WINDOWS_FAILURE_ACTIONS = "restart/5000/restart/10000/restart/15000";

const psQuote = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** PowerShell registering (or re-registering) and starting the Windows service through nssm. */
export function renderWindowsServiceInstall(spec: ServiceSpec & { readonly nssm: string }): string {
  const entry = `${spec.installDir}\\current\\bin\\winfleet-agent.js`;
  return [
    "$ErrorActionPreference = 'Stop'",
    "$name = 'winfleet-agent'",
    `$nssm = ${psQuote(spec.nssm)}`,
    "if (Get-Service -Name $name -ErrorAction SilentlyContinue) {",
    "    Stop-Service -Name $name -Force",
    "    & $nssm remove $name confirm | Out-Null",
    '    if ($LASTEXITCODE -ne 0) { throw "nssm could not remove $name ($LASTEXITCODE)" }',
    "}",
    `& $nssm install $name ${psQuote(spec.node)} ${[...AGENT_NODE_FLAGS, entry, ...spec.args].map(psQuote).join(" ")} | Out-Null`,
    'if ($LASTEXITCODE -ne 0) { throw "nssm could not install $name ($LASTEXITCODE)" }',
    "& $nssm set $name DisplayName 'winfleet agent' | Out-Null",
    "& $nssm set $name Start SERVICE_AUTO_START | Out-Null",
    "& $nssm set $name ObjectName LocalSystem | Out-Null",
    `& $nssm set $name AppStdout ${psQuote(`${spec.installDir}\\agent.log`)} | Out-Null`,
    `& $nssm set $name AppStderr ${psQuote(`${spec.installDir}\\agent.log`)} | Out-Null`,
    "& $nssm set $name AppRotateFiles 1 | Out-Null",
    `& sc.exe failure $name reset= 300 actions= ${WINDOWS_FAILURE_ACTIONS} | Out-Null`,
    'if ($LASTEXITCODE -ne 0) { throw "sc.exe could not set failure actions ($LASTEXITCODE)" }',
    "& sc.exe failureflag $name 1 | Out-Null",
    "Start-Service -Name $name",
    "",
  ].join("\n");
}
