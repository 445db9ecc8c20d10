/**
 * What a Windows node adds: the kubelet's, containerd's, kube-proxy's and the
 * CNI's logs, the event logs that explain a node going NotReady (Service
 * Control Manager, HNS, Hyper-V compute, container filters), HNS networks and
 * endpoints, the state and failure actions of the node's services, the
 * firewall rules content and broker own, the host processes the broker named
 * `rancher-wins-*`, the agent's scheduled task, a pending reboot, ipconfig
 * and routes. Scripts are
 * rendered by pure functions, so they are checked as data off Windows.
 */
import { join } from "node:path";
import type { Collector } from "./collector";
import { commandCollector, logDirCollector } from "./sources";

/** Services whose state and failure actions are collected (those content installs, and what they stand on). */
export const WINDOWS_SERVICES = [
  "winfleet-agent",
  "containerd",
  "kubelet",
  "kube-proxy",
  "CalicoNode",
  "CalicoFelix",
  "csiproxy",
  "windows_exporter",
  "rancher-wins",
  "rke2",
  "hns",
  "vmcompute",
] as const;

/** Event log channels collected, with the XPath filter's provider, if any. */
export const EVENT_LOGS: readonly { readonly name: string; readonly channel: string; readonly provider?: string }[] = [
  { name: "scm", channel: "System", provider: "Service Control Manager" },
  { name: "hns-admin", channel: "Microsoft-Windows-Host-Network-Service-Admin" },
  { name: "hns-operational", channel: "Microsoft-Windows-Host-Network-Service-Operational" },
  { name: "compute-admin", channel: "Microsoft-Windows-Hyper-V-Compute-Admin" },
  { name: "compute-operational", channel: "Microsoft-Windows-Hyper-V-Compute-Operational" },
  { name: "containers-wcifs", channel: "Microsoft-Windows-Containers-Wcifs/Operational" },
  { name: "containers-bindflt", channel: "Microsoft-Windows-Containers-BindFlt/Operational" },
  { name: "task-scheduler", channel: "Microsoft-Windows-TaskScheduler/Operational" },
];

/**
 * Log directories below the root that content's services write (see the kubelet, containerd, kube-proxy and calico
 * components).
 */
export const LOG_DIRS = ["kubelet", "containerd", "kube-proxy", "calico", "flannel"] as const;

/** argv running a PowerShell script. */
export function powershell(script: string): string[] {
  return [
    "powershell.exe",
    "-NoLogo",
    "-NoProfile",
    "-NonInteractive",
    "-ExecutionPolicy",
    "Bypass",
    "-Command",
    `$ErrorActionPreference = 'Stop'; $ProgressPreference = 'SilentlyContinue'; ${script}`,
  ];
}

const psList = (items: readonly string[]): string => `@(${items.map((s) => `'${s.replace(/'/g, "''")}'`).join(", ")})`;

/** The services' state, start mode, exit codes and failure actions, as JSON. */
export function servicesScript(names: readonly string[] = WINDOWS_SERVICES): string {
  return [
    `$rows = foreach ($n in ${psList(names)}) {`,
    "  $s = Get-CimInstance -ClassName Win32_Service -Filter \"Name='$n'\" -ErrorAction SilentlyContinue",
    "  if ($null -eq $s) { continue }",
    "  $failure = (& sc.exe qfailure $n 2>&1 | Out-String).Trim()",
    "  [pscustomobject]@{ name = $s.Name; state = [string]$s.State; startMode = [string]$s.StartMode; exitCode = $s.ExitCode; serviceExitCode = $s.ServiceSpecificExitCode; account = $s.StartName; path = $s.PathName; failureActions = $failure }",
    "}",
    "ConvertTo-Json -InputObject @($rows) -Depth 4",
  ].join("\n");
}

/** The firewall rules content (group `winfleet`) and the broker (`rancher-wins-*`, ActiveStore) own, as JSON. */
export function firewallScript(): string {
  return [
    "$rules = @(Get-NetFirewallRule -PolicyStore ActiveStore | Where-Object { $_.Group -eq 'winfleet' -or $_.Name -like 'rancher-wins-*' })",
    "$rows = foreach ($r in $rules) {",
    "  $p = $r | Get-NetFirewallPortFilter",
    "  [pscustomobject]@{ name = $r.Name; displayName = $r.DisplayName; group = $r.Group; enabled = [string]$r.Enabled; direction = [string]$r.Direction; action = [string]$r.Action; protocol = [string]$p.Protocol; localPort = ($p.LocalPort -join ',') }",
    "}",
    "ConvertTo-Json -InputObject @($rows) -Depth 3",
  ].join("\n");
}

/**
 * Host processes named `rancher-wins-*` (what the broker, and wins before it, started), as JSON; command lines are left
 * out: they may carry credentials.
 */
export function hostProcessesScript(): string {
  return [
    "$rows = foreach ($p in @(Get-CimInstance -ClassName Win32_Process -Filter \"Name LIKE 'rancher-wins-%'\")) {",
    "  [pscustomobject]@{ pid = $p.ProcessId; parentPid = $p.ParentProcessId; name = $p.Name; path = $p.ExecutablePath; started = $p.CreationDate.ToUniversalTime().ToString('o') }",
    "}",
    "ConvertTo-Json -InputObject @($rows) -Depth 3",
  ].join("\n");
}

/**
 * The scheduled task the agent runs as (its state, last run and last result: 3010 is a reboot it asked for), as JSON.
 */
export function agentTaskScript(task = "winfleet-agent"): string {
  const name = `'${task.replace(/'/g, "''")}'`;
  return [
    `$task = Get-ScheduledTask -TaskName ${name} -ErrorAction SilentlyContinue`,
    "if ($null -eq $task) { ConvertTo-Json -InputObject ([pscustomobject]@{ registered = $false }); return }",
    `$info = Get-ScheduledTaskInfo -TaskName ${name}`,
    "ConvertTo-Json -Depth 3 -InputObject ([pscustomobject]@{ registered = $true; name = $task.TaskName; state = [string]$task.State; lastRunTime = [string]$info.LastRunTime; lastTaskResult = $info.LastTaskResult; nextRunTime = [string]$info.NextRunTime; missedRuns = $info.NumberOfMissedRuns })",
  ].join("\n");
}

/** Whether Windows waits for a reboot, and which of its markers says so, as JSON. */
export function pendingRebootScript(): string {
  return [
    "$reasons = @()",
    "if (Test-Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Component Based Servicing\\RebootPending') { $reasons += 'Component Based Servicing' }",
    "if (Test-Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\WindowsUpdate\\Auto Update\\RebootRequired') { $reasons += 'Windows Update' }",
    "$rename = Get-ItemProperty -Path 'HKLM:\\SYSTEM\\CurrentControlSet\\Control\\Session Manager' -Name PendingFileRenameOperations -ErrorAction SilentlyContinue",
    "if ($null -ne $rename) { $reasons += 'pending file renames' }",
    "ConvertTo-Json -InputObject ([pscustomobject]@{ pending = ($reasons.Count -gt 0); reasons = @($reasons) }) -Depth 3",
  ].join("\n");
}

/** The OS build, as the registry has it. */
export function hostVersionScript(): string {
  return "Get-ItemProperty -Path 'HKLM:\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion' | Select-Object -Property @('ProductName', 'DisplayVersion', 'ReleaseId', 'CurrentBuild', 'UBR', 'BuildLabEx') | ConvertTo-Json -Depth 2";
}

/** argv of `wevtutil` reading a channel's events of the last `sinceMs`, newest first. */
export function eventLogCommand(channel: string, provider: string | undefined, sinceMs: number): string[] {
  const time = `TimeCreated[timediff(@SystemTime) <= ${Math.max(1, Math.trunc(sinceMs))}]`;
  const query = provider ? `*[System[Provider[@Name='${provider}'] and ${time}]]` : `*[System[${time}]]`;
  return ["wevtutil.exe", "qe", channel, `/q:${query}`, "/f:text", "/rd:true", "/c:5000"];
}

/** The Windows collectors. */
export function windowsCollectors(): Collector[] {
  const events: Collector[] = EVENT_LOGS.map((e) => ({
    name: `eventlog-${e.name}`,
    source: `wevtutil qe ${e.channel}${e.provider ? ` (${e.provider})` : ""}`,
    collect: (ctx, sink, signal) =>
      commandCollector(
        `eventlog-${e.name}`,
        `windows/events/${e.name}.txt`,
        eventLogCommand(e.channel, e.provider, Date.now() - ctx.since.getTime()),
        { optional: true },
      ).collect(ctx, sink, signal),
  }));
  return [
    commandCollector("services", "system/services.json", powershell(servicesScript())),
    commandCollector("agent-task", "windows/agent-task.json", powershell(agentTaskScript())),
    commandCollector("pending-reboot", "windows/pending-reboot.json", powershell(pendingRebootScript())),
    commandCollector("host-version", "windows/host-version.json", powershell(hostVersionScript())),
    commandCollector("host-processes", "windows/rancher-wins-processes.json", powershell(hostProcessesScript())),
    commandCollector("firewall", "windows/firewall-rules.json", powershell(firewallScript())),
    commandCollector("hns-networks", "windows/hns-networks.txt", ["hnsdiag.exe", "list", "networks", "-d"], {
      optional: true,
    }),
    commandCollector("hns-endpoints", "windows/hns-endpoints.txt", ["hnsdiag.exe", "list", "endpoints", "-d"], {
      optional: true,
    }),
    commandCollector(
      "hns-loadbalancers",
      "windows/hns-loadbalancers.txt",
      ["hnsdiag.exe", "list", "loadbalancers", "-d"],
      { optional: true },
    ),
    commandCollector("ipconfig", "windows/ipconfig.txt", ["ipconfig.exe", "/all"]),
    commandCollector("routes", "windows/routes.txt", ["route.exe", "print"]),
    ...events,
    ...LOG_DIRS.map((d) => logDirCollector(`log-${d}`, `logs/${d}`, (root) => join(root, "var", "log", d))),
  ];
}
