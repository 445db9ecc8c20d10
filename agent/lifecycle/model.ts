/**
 * The lifecycle engine's vocabulary: components as the host records them and
 * as a template wants them, and the steps of a plan. Plain readonly data, so
 * the planner is a pure function and a plan can be journaled as JSON.
 */
import { type ComponentMetadata, type Disruption, type ShellKind, restartsText } from "../content";
import type { Phase } from "./events";

/** Exit code a command uses to say "done, but restart the host" (Windows' ERROR_SUCCESS_REBOOT_REQUIRED). */
export const REBOOT_EXIT = 3010;

/** The metadata sections that hold commands. */
export const SECTIONS = ["install", "uninstall", "pre_upgrade", "post_upgrade"] as const;
/** One section. */
export type SectionName = (typeof SECTIONS)[number];

/** Where a command sits in its section, in the order they run. */
export const ROLES = ["lprecmds", "commands", "lpstcmds"] as const;
/** One role. */
export type Role = (typeof ROLES)[number];

/**
 * A lifecycle left part-way by a failed or superseded run: `install` and
 * `post_upgrade` mean the files of `version` are on the host but that section
 * has not finished; `upgrade` means `pre_upgrade` started (the old version is
 * still the one on the host); `remove` means its uninstall started.
 */
export type Pending = "install" | "post_upgrade" | "upgrade" | "remove";

/** A component the host has, with the metadata recorded when it was laid down. */
export interface InstalledComponent {
  readonly name: string;
  readonly version: string;
  readonly metadata: ComponentMetadata;
  /** Config paths of every node its Ignition config lays down (files, directories, links). */
  readonly paths: readonly string[];
  readonly pending?: Pending;
}

/** A component a template wants, with its content. */
export interface DesiredComponent {
  readonly name: string;
  readonly version: string;
  readonly metadata: ComponentMetadata;
  readonly paths: readonly string[];
}

/** A component lifecycle, as its metadata's `disrupts` names them. */
export type LifecycleName = "install" | "upgrade" | "uninstall";

/** What a step's lifecycle disrupts for the node's pods (from the component's `disrupts`). */
export interface StepDisruption {
  readonly lifecycle: LifecycleName;
  readonly what: readonly Disruption[];
}

interface StepBase {
  readonly phase: Phase;
  /** The component the step belongs to ("" for a reboot). */
  readonly component: string;
  /** The version whose content or recorded metadata the step uses. */
  readonly version: string;
  /** The priority of the step's group within its phase. */
  readonly priority: number;
  /** Set on a component's last step of the run: its lifecycle is complete once this succeeds. */
  readonly finalizes?: "installed" | "upgraded" | "removed";
  /** For upgrades: the version the component had before. */
  readonly from?: string;
  /** Set on every step of a lifecycle that disrupts the node's pods: the node is drained before the first. */
  readonly disrupts?: StepDisruption;
}

/** Runs one command of a section. */
export interface CommandStep extends StepBase {
  readonly kind: "command";
  readonly section: SectionName;
  readonly role: Role;
  readonly index: number;
  readonly command: string;
  readonly shell: ShellKind;
  readonly isolated: boolean;
  readonly timeoutSeconds: number;
}

/**
 * Lays down a version's Ignition files; for an upgrade in place, first removes the old version's files the new one no
 * longer has.
 */
export interface FilesStep extends StepBase {
  readonly kind: "files";
  /** The section that completes the component once its files are down. */
  readonly next: "install" | "post_upgrade";
}

/** Removes a version's files and its metadata's `files` entries. */
export interface RemoveFilesStep extends StepBase {
  readonly kind: "remove-files";
}

/** Restarts the host once, at the end of a priority group that asked for it. */
export interface RebootStep extends StepBase {
  readonly kind: "reboot";
  /** Why: one entry per section that asked. */
  readonly reasons: readonly string[];
}

/** Any step. */
export type Step = CommandStep | FilesStep | RemoveFilesStep | RebootStep;

/** A plan: steps in the order they run. */
export interface Plan {
  readonly steps: readonly Step[];
}

/** The key of a step's reboot group. */
export function groupOf(step: Step): string {
  return `${step.phase}:${step.priority}`;
}

/** A one-line description of a step, for people. */
export function describeStep(step: Step): string {
  switch (step.kind) {
    case "command":
      return `${step.section}.${step.role}[${step.index}]: ${firstLine(step.command)}`;
    case "files":
      return step.from ? `files (from ${step.from})` : "files";
    case "remove-files":
      return "remove files";
    case "reboot":
      return `reboot (${step.reasons.join("; ")})`;
  }
}

/**
 * Why a step disrupts the node's pods, for people (`sandbox-service 1.1.0 upgrade restarts the container
 * runtime`), or undefined when it does not: a reboot always does.
 */
export function disruptionOf(step: Step): string | undefined {
  if (step.kind === "reboot") return `the host restarts (${step.reasons.join("; ")})`;
  const d = step.disrupts;
  if (!d || d.what.length === 0) return undefined;
  return `${step.component} ${step.version} ${d.lifecycle} ${restartsText(d.what)}`;
}

function firstLine(text: string): string {
  const line = text.split("\n").find((l) => l.trim() !== "") ?? "";
  return line.length > 80 ? `${line.slice(0, 77)}...` : line;
}
