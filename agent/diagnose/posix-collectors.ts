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
    const argv = ["journalctl", "--no-pager", "-o", "short-iso", "--since", ctx.since.toISOString().replace("T", " ").slice(0, 19), ...POSIX_UNITS.flatMap((u) => ["-u", u])];
    await commandCollector("journalctl", "system/journal.txt", argv, { optional: true }).collect(ctx, sink, signal);
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
  ];
}
