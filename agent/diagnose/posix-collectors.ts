/**
 * What a POSIX host adds: addresses and routes, the process table, the kernel
 * and, where systemd runs, the journal of the agent and the node's services.
 * A tool that is not installed is recorded as missing, not as a failure.
 */
import type { Collector } from "./collector";
import { commandCollector } from "./sources";

/** Units whose journal is collected when journalctl exists. */
export const POSIX_UNITS = ["winfleet-agent", "kubelet", "containerd", "kube-proxy"] as const;

const journal: Collector = {
  name: "journalctl",
  source: `journalctl ${POSIX_UNITS.map((u) => `-u ${u}`).join(" ")}`,
  async collect(ctx, sink, signal) {
    const argv = [
      "journalctl",
      "--no-pager",
      "-o",
      "short-iso",
      "--since",
      ctx.since.toISOString().replace("T", " ").slice(0, 19),
      ...POSIX_UNITS.flatMap((u) => ["-u", u]),
    ];
    await commandCollector("journalctl", "system/journal.txt", argv, { optional: true }).collect(ctx, sink, signal);
  },
};

/** One service as system/services.json holds it (the shape the Windows collector writes too). */
export interface ServiceRow {
  readonly name: string;
  /** `Running` when active, else systemd's sub-state (`failed`, `dead`…). */
  readonly state: string;
  /** `Auto` when enabled, else the unit file state. */
  readonly startMode: string;
  readonly exitCode?: number;
}

/**
 * Parses `systemctl show` output (blocks of KEY=VALUE separated by blank lines); units systemd does not know are left
 * out.
 */
export function parseSystemctlShow(text: string): ServiceRow[] {
  const rows: ServiceRow[] = [];
  for (const block of text.split(/\n\s*\n/)) {
    const p = Object.fromEntries(
      block
        .split("\n")
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as const)
        .filter(([k]) => k !== ""),
    );
    if (!p.Id || p.LoadState === "not-found") continue;
    const exit = Number(p.ExecMainStatus);
    rows.push({
      name: p.Id.replace(/\.service$/, ""),
      state: p.ActiveState === "active" ? "Running" : (p.SubState ?? p.ActiveState ?? "unknown"),
      startMode: p.UnitFileState === "enabled" ? "Auto" : (p.UnitFileState ?? "unknown"),
      ...(Number.isInteger(exit) && p.ExecMainStatus !== "" ? { exitCode: exit } : {}),
    });
  }
  return rows;
}

const services: Collector = {
  name: "services",
  source: `systemctl show ${POSIX_UNITS.join(" ")}`,
  async collect(ctx, sink, signal) {
    const argv = [
      "systemctl",
      "show",
      "--property=Id,LoadState,ActiveState,SubState,UnitFileState,ExecMainStatus",
      ...POSIX_UNITS.map((u) => `${u}.service`),
    ];
    const r = await ctx.run(argv, signal);
    // No systemd (a container, another init): there are no services to report, which is not a failure.
    if (r.startError !== undefined || r.code !== 0) {
      sink.missing(
        "system/services.json",
        `not available on this host: ${r.startError ?? (r.stderr.trim() || `systemctl exited ${String(r.code)}`)}`,
      );
      return;
    }
    sink.file("system/services.json", `${JSON.stringify(parseSystemctlShow(r.stdout.toString()), null, 2)}\n`);
  },
};

/** The POSIX collectors. */
export function posixCollectors(): Collector[] {
  return [
    commandCollector("uname", "system/uname.txt", ["uname", "-a"], { optional: true }),
    commandCollector("ip-addr", "system/ip-addr.txt", ["ip", "addr"], { optional: true }),
    commandCollector("ip-route", "system/ip-route.txt", ["ip", "route"], { optional: true }),
    commandCollector("ps", "system/ps.txt", ["ps", "-eo", "pid,ppid,user,lstart,stat,args"], { optional: true }),
    commandCollector("df", "system/df.txt", ["df", "-h"], { optional: true }),
    journal,
    services,
  ];
}
