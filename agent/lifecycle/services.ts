/**
 * The node services the installed components keep running (their metadata's
 * `services`), checked against the host: a service that is stopped, disabled
 * or gone is reported, and one that exists is brought back (started
 * automatically again, then started). Reading and changing services goes
 * through a {@link ServiceProbe} passed in: the Service Control Manager on
 * Windows (./services.win32.ts), none elsewhere.
 */
import { readJournal } from "./journal";
import { recorded } from "./store";

/** A service as the host has it. */
export interface ServiceState {
  readonly exists: boolean;
  readonly running: boolean;
  /** How it starts: automatic (also delayed), manual (on demand) or disabled. */
  readonly startType: "automatic" | "manual" | "disabled";
}

/** Reads and changes the host's services. */
export interface ServiceProbe {
  state(name: string): Promise<ServiceState>;
  /** Makes the service start automatically and starts it. */
  restore(name: string): Promise<void>;
}

/** A node service not as its component wants it. */
export interface ServiceIssue {
  readonly component: string;
  readonly service: string;
  readonly problem: "stopped" | "disabled" | "missing";
}

/** What one check found and did. */
export interface ServiceCheck {
  readonly issues: readonly ServiceIssue[];
  /** The services brought back. */
  readonly restored: readonly string[];
  /** Those it could not bring back, with why. */
  readonly failed: readonly { readonly service: string; readonly error: string }[];
}

/** The problem with a service's state, if any: disabled before stopped, as both need the start type put back. */
export function serviceProblem(s: ServiceState): ServiceIssue["problem"] | undefined {
  if (!s.exists) return "missing";
  if (s.startType === "disabled") return "disabled";
  if (!s.running) return "stopped";
  return undefined;
}

/**
 * Checks every service the installed components declare; with `restore`, brings back each that exists (a missing one
 * is the component's to install again: `repair`).
 */
export async function checkServices(
  root: string,
  probe: ServiceProbe,
  options: { readonly restore: boolean },
): Promise<ServiceCheck> {
  const journal = await readJournal(root);
  const issues: ServiceIssue[] = [];
  for (const i of journal.installed) {
    if (i.pending === "remove") continue;
    const { metadata } = await recorded(root, i.name, i.version);
    for (const service of metadata.services ?? []) {
      const problem = serviceProblem(await probe.state(service));
      if (problem) issues.push({ component: i.name, service, problem });
    }
  }
  const restored: string[] = [];
  const failed: { service: string; error: string }[] = [];
  if (options.restore) {
    for (const issue of issues) {
      if (issue.problem === "missing") continue;
      try {
        await probe.restore(issue.service);
        restored.push(issue.service);
      } catch (e) {
        failed.push({ service: issue.service, error: e instanceof Error ? e.message : String(e) });
      }
    }
  }
  return { issues, restored, failed };
}
