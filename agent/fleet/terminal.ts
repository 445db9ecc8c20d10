/**
 * The fleet in a terminal: while hosts converge, one live line per host
 * (state, template, the step it runs); then the fleet table; then one line per
 * timeline event. Without a terminal (a CI log, a pipe), one plain line per
 * event and the table at the end; with `--json`, one JSON object per event.
 */
import type { HostView } from "./host";
import type { FleetEvent, FleetStatus } from "./manager";

/** Where the display writes. */
export interface Out {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** The fleet table. */
export function fleetTable(hosts: readonly HostView[]): string {
  const rows = hosts.map((h) => [
    h.name,
    h.state,
    h.template ? `${h.template.name} ${h.template.version}` : "—",
    h.components
      .map((c) => `${c.name.replace(/^sandbox-/, "")} ${c.version}${c.state === "installed" ? "" : `(${c.state})`}`)
      .join(", ") || "—",
    h.lastError && h.state === "failed"
      ? `${h.lastError.component} ${h.lastError.phase}: exit ${String(h.lastError.exitCode)}`
      : h.drain
        ? drainText(h.drain)
        : h.step
          ? `${h.step.component} ${h.step.phase}`
          : "",
  ]);
  const head = ["HOST", "STATE", "TEMPLATE", "COMPONENTS", "STEP / ERROR"];
  const widths = head.map((t, i) => Math.max(t.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return `${[line(head), ...rows.map(line)].join("\n")}\n`;
}

/** A drain in a line: what it evicted and what it waits for. */
export function drainText(d: NonNullable<HostView["drain"]>): string {
  return `draining: ${d.evicted} evicted${d.waitingFor.length > 0 ? `, waiting for ${d.waitingFor.join("; ")}` : ""}`;
}

function hostLine(h: HostView): string {
  const tpl = h.template ? `${h.template.name} ${h.template.version}` : "—";
  const want = `${h.desired.name} ${h.desired.version}`;
  const doing =
    h.state === "failed" && h.lastError
      ? `✗ ${h.lastError.component} ${h.lastError.phase}: exit ${String(h.lastError.exitCode)}`
      : h.drain
        ? drainText(h.drain)
        : h.step
          ? `${h.step.component} ${h.step.phase}: ${h.step.title}`
          : "";
  return `  ${h.name.padEnd(10)} ${h.state.padEnd(10)} ${(tpl === want ? tpl : `${tpl} → ${want}`).padEnd(28)} ${doing}`.slice(
    0,
    160,
  );
}

// One line per event for logs: time, host, what happened; host lines only when the state changes.
function plainLine(e: FleetEvent | { type: "snapshot"; status: FleetStatus }): string {
  const time = (at?: string): string => (at ? new Date(at) : new Date()).toISOString().slice(11, 19);
  switch (e.type) {
    case "snapshot":
      return "";
    case "rollout":
      return `${time()}  ${e.text}\n`;
    case "timeline":
      return `${time(e.event.at)}  ${e.event.host.padEnd(10)} ${e.event.text}\n`;
    case "host":
      return `${time()}  ${e.host.name.padEnd(10)} ${e.host.state}${e.host.state === "failed" && e.host.lastError ? `: ${e.host.lastError.component} ${e.host.lastError.phase} exited ${String(e.host.lastError.exitCode)}` : ""}\n`;
  }
}

/** Live display of fleet events. */
export class FleetDisplay {
  private hosts = new Map<string, HostView>();
  /** What was last printed per host in JSON mode, so only state changes are printed. */
  private printed = new Map<string, string>();
  private drawn = 0;
  private live = true;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly out: Out,
    private readonly json: boolean,
  ) {
    if (!json && out.isTTY) {
      this.timer = setInterval(() => this.redraw(), 250);
      this.timer.unref();
    }
  }

  /** Shows an event. */
  event(e: FleetEvent | { type: "snapshot"; status: FleetStatus }): void {
    if (this.json || !this.out.isTTY) {
      if (e.type === "host") {
        const key = `${e.host.state} ${e.host.template?.version ?? ""}`;
        if (this.printed.get(e.host.name) === key) return;
        this.printed.set(e.host.name, key);
      }
      if (this.json)
        this.out.write(
          `${JSON.stringify(e.type === "snapshot" ? { type: "snapshot", hosts: e.status.hosts.map((h) => h.name) } : e)}\n`,
        );
      else this.out.write(plainLine(e));
      return;
    }
    if (e.type === "snapshot") for (const h of e.status.hosts) this.hosts.set(h.name, h);
    else if (e.type === "host") this.hosts.set(e.host.name, e.host);
    else if (e.type === "rollout") this.print(`${e.text}\n`);
    else if (!this.live) this.print(`${new Date(e.event.at).toLocaleTimeString()}  ${e.event.host}  ${e.event.text}\n`);
  }

  /** Ends the live lines and prints the table. */
  settle(hosts: readonly HostView[]): void {
    this.redraw();
    this.live = false;
    if (this.timer) clearInterval(this.timer);
    this.drawn = 0;
    if (!this.json) this.out.write(`\n${fleetTable(hosts)}`);
  }

  /** Stops the display. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private print(text: string): void {
    this.clear();
    this.out.write(text);
    this.redraw();
  }

  private clear(): void {
    if (this.drawn > 0) this.out.write(`\u001b[${this.drawn}F\u001b[0J`);
    this.drawn = 0;
  }

  private redraw(): void {
    if (!this.live || this.json || !this.out.isTTY) return;
    this.clear();
    const lines = [...this.hosts.values()].map(hostLine);
    if (lines.length > 0) this.out.write(`${lines.join("\n")}\n`);
    this.drawn = lines.length;
  }
}
