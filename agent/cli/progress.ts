/**
 * Showing an apply as it happens: on a terminal, one line per step (component,
 * phase, what it runs, elapsed time ticking while it runs); otherwise one JSON
 * object per event, for logs and for the programs that drive the agent.
 */
import type { LifecycleEvent, LifecycleObserver } from "../lifecycle";

/** Where progress goes. */
export interface ProgressOut {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** A progress observer; `close()` stops its ticker. */
export interface Progress extends LifecycleObserver {
  close(): void;
}

/** JSON lines, one per event. */
export function jsonProgress(out: ProgressOut): Progress {
  return {
    event: (e) => out.write(`${JSON.stringify({ event: e.type, ...withoutType(e) })}\n`),
    close() {},
  };
}

function withoutType(e: LifecycleEvent): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...e };
  delete rest.type;
  return rest;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;

/** Human lines on a terminal. */
export function ttyProgress(out: ProgressOut): Progress {
  let total = 0;
  let line = "";
  let started = 0;
  let ticker: NodeJS.Timeout | undefined;
  const stop = (): void => {
    if (ticker) clearInterval(ticker);
    ticker = undefined;
  };
  const redraw = (suffix: string, end = ""): void => {
    out.write(`\r\u001b[2K${line} ${suffix}${end}`);
  };
  return {
    event(e) {
      switch (e.type) {
        case "apply-started":
          total = e.steps;
          out.write(
            `${e.resumed ? "resuming" : "applying"} ${e.template.name ? `${e.template.name} ${e.template.version}` : "uninstall"}: ${e.steps} steps\n`,
          );
          return;
        case "step-started": {
          const n = String(e.step.id + 1).padStart(String(total).length);
          line = `[${n}/${total}] ${e.step.phase.padEnd(12)} ${`${e.step.component} ${e.step.version}`.padEnd(28)} ${e.step.title}`;
          started = Date.now();
          redraw("…");
          stop();
          ticker = setInterval(() => redraw(`… ${seconds(Date.now() - started)}`), 1000);
          ticker.unref();
          return;
        }
        case "step-finished":
          stop();
          redraw(`✓ ${seconds(e.durationMs)}`, "\n");
          return;
        case "apply-failed":
          stop();
          redraw("✗", "\n");
          return;
        case "reboot-required":
          stop();
          out.write(`reboot required: ${e.reasons.join("; ")}\n`);
          return;
        case "reboot-done":
          out.write("the host restarted; continuing\n");
          return;
        case "downgrade-allowed":
          out.write(
            `downgrade allowed: ${e.kind} ${e.to ?? "(unversioned)"} replaces ${e.from} (key ${e.keyId.slice(0, 16)}…)\n`,
          );
          return;
        case "component-installed":
        case "component-upgraded":
        case "component-removed":
        case "apply-converged":
        case "drift-found":
        case "drift-corrected":
        case "service-down":
        case "service-restored":
        case "state":
          return;
      }
    },
    close: stop,
  };
}

/** The right progress for `out`: human on a terminal unless JSON is asked for. */
export function progressFor(out: ProgressOut, json: boolean): Progress {
  return json || !out.isTTY ? jsonProgress(out) : ttyProgress(out);
}
