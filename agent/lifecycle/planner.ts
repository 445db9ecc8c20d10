/**
 * The planner: the one place the lifecycle semantics live. A pure function
 * from what the host has (as recorded) and what a template wants to the
 * ordered steps that get from one to the other:
 *
 * 1. phases in order: uninstall (dropped components) → pre_upgrade (changed
 *    versions: the new version's `pre_upgrade`, then, when it says
 *    `uninstall: yes`, the old version's `uninstall` and the removal of its
 *    files, after which the component continues as a fresh install) → files →
 *    install (new components) → post_upgrade (upgraded in place);
 * 2. within a phase, by that phase's section priority, lower first; ties in
 *    template order, or reverse template order for uninstall;
 * 3. one reboot at the end of a priority group in which a section says
 *    `reboot: yes`;
 * 4. old versions are handled with the metadata recorded on the host;
 * 5. with nothing desired, every installed component is uninstalled.
 *
 * {@link applyEffect} is the matching state transition: what the host records
 * once a step has run. Planning, then applying every step's effect, ends with
 * exactly the desired components.
 */
import type { ComponentMetadata, Disruption } from "../content";
import type { Phase } from "./events";
import {
  type CommandStep,
  type DesiredComponent,
  type InstalledComponent,
  type Plan,
  type RebootStep,
  type SectionName,
  type Step,
  type StepDisruption,
  ROLES,
} from "./model";

type Lifecycle =
  | { readonly kind: "fresh"; readonly d: DesiredComponent }
  | { readonly kind: "in-place"; readonly c: InstalledComponent; readonly d: DesiredComponent }
  | { readonly kind: "through-uninstall"; readonly c: InstalledComponent; readonly d: DesiredComponent }
  /** Same version, but its last lifecycle did not finish: lay the files down and run that section again. */
  | {
      readonly kind: "resume";
      readonly c: InstalledComponent;
      readonly d: DesiredComponent;
      readonly section: "install" | "post_upgrade";
    };

interface Entry {
  readonly component: string;
  readonly version: string;
  readonly metadata: ComponentMetadata;
  readonly section: SectionName;
  /** Position in template order (installed order for uninstall). */
  readonly order: number;
  readonly from?: string;
  /** Extra sections run right after, in the same group (an old version's uninstall). */
  readonly then?: readonly {
    readonly version: string;
    readonly metadata: ComponentMetadata;
    readonly section: SectionName;
  }[];
  /** Steps appended after the entry's commands, in the same group. */
  readonly tail?: readonly Step[];
  /** What the entry's lifecycle disrupts (every step of it carries it). */
  readonly disrupts?: StepDisruption | undefined;
}

/** What a lifecycle disrupts, from its metadata (and `extra`, an old version's uninstall), or undefined. */
function disruption(
  lifecycle: StepDisruption["lifecycle"],
  m: ComponentMetadata,
  extra: readonly Disruption[] = [],
): StepDisruption | undefined {
  const what = [...new Set([...(m.disrupts?.[lifecycle] ?? []), ...extra])];
  return what.length > 0 ? { lifecycle, what } : undefined;
}

/** What a component's lifecycle in the plan disrupts: an upgrade's is the new version's word (and its uninstall's). */
function lifecycleDisruption(l: Lifecycle): StepDisruption | undefined {
  switch (l.kind) {
    case "fresh":
      return disruption("install", l.d.metadata);
    case "in-place":
      return disruption("upgrade", l.d.metadata);
    case "through-uninstall":
      return disruption("upgrade", l.d.metadata, l.c.metadata.disrupts?.uninstall);
    case "resume":
      return disruption(l.section === "install" ? "install" : "upgrade", l.d.metadata);
  }
}

const withDisruption = <T extends object>(step: T, d: StepDisruption | undefined): T =>
  d ? { ...step, disrupts: d } : step;

/** Plans the way from `installed` to `desired` (template order). */
export function planLifecycle(installed: readonly InstalledComponent[], desired: readonly DesiredComponent[]): Plan {
  const have = new Map(installed.map((c) => [c.name, c]));
  const want = new Set(desired.map((d) => d.name));
  const lifecycles: Lifecycle[] = [];
  for (const d of desired) {
    const c = have.get(d.name);
    if (!c) lifecycles.push({ kind: "fresh", d });
    else if (c.version !== d.version)
      lifecycles.push(
        d.metadata.pre_upgrade.uninstall ? { kind: "through-uninstall", c, d } : { kind: "in-place", c, d },
      );
    else if (c.pending === "post_upgrade") lifecycles.push({ kind: "resume", c, d, section: "post_upgrade" });
    else if (c.pending !== undefined) lifecycles.push({ kind: "resume", c, d, section: "install" });
  }
  const order = new Map(desired.map((d, i) => [d.name, i]));
  const position = (name: string): number => order.get(name) ?? 0;
  const disrupts = new Map(lifecycles.map((l) => [l.d.name, lifecycleDisruption(l)]));

  const steps: Step[] = [];
  const dropped = installed.map((c, i) => ({ c, i })).filter(({ c }) => !want.has(c.name));
  steps.push(
    ...phaseSteps(
      "uninstall",
      dropped.map(({ c, i }) => ({
        component: c.name,
        version: c.version,
        metadata: c.metadata,
        section: "uninstall" as const,
        order: -i,
        disrupts: disruption("uninstall", c.metadata),
      })),
    ),
  );
  for (const { c } of reversedByUninstall(dropped)) {
    const step: Step = {
      kind: "remove-files",
      phase: "uninstall",
      component: c.name,
      version: c.version,
      priority: c.metadata.uninstall.priority,
    };
    steps.push(withDisruption(step, disruption("uninstall", c.metadata)));
  }

  steps.push(
    ...phaseSteps(
      "pre_upgrade",
      lifecycles.flatMap((l): Entry[] => {
        if (l.kind !== "in-place" && l.kind !== "through-uninstall") return [];
        const base = {
          component: l.d.name,
          version: l.d.version,
          metadata: l.d.metadata,
          section: "pre_upgrade" as const,
          order: position(l.d.name),
          from: l.c.version,
          disrupts: disrupts.get(l.d.name),
        };
        if (l.kind === "in-place") return [base];
        const remove: Step = withDisruption<Step>(
          {
            kind: "remove-files",
            phase: "pre_upgrade",
            component: l.c.name,
            version: l.c.version,
            priority: l.d.metadata.pre_upgrade.priority,
            from: l.c.version,
          },
          disrupts.get(l.d.name),
        );
        return [
          { ...base, then: [{ version: l.c.version, metadata: l.c.metadata, section: "uninstall" }], tail: [remove] },
        ];
      }),
    ),
  );

  for (const l of [...lifecycles].sort((a, b) => position(a.d.name) - position(b.d.name))) {
    const from = l.kind === "in-place" ? l.c.version : undefined;
    const next =
      l.kind === "in-place" || (l.kind === "resume" && l.section === "post_upgrade") ? "post_upgrade" : "install";
    const files: Step = {
      kind: "files",
      phase: "files",
      component: l.d.name,
      version: l.d.version,
      priority: 0,
      next,
      ...(from ? { from } : {}),
    };
    steps.push(withDisruption(files, disrupts.get(l.d.name)));
  }

  const installs = lifecycles.filter(
    (l) => l.kind === "fresh" || l.kind === "through-uninstall" || (l.kind === "resume" && l.section === "install"),
  );
  steps.push(
    ...phaseSteps(
      "install",
      installs.map((l) => ({
        component: l.d.name,
        version: l.d.version,
        metadata: l.d.metadata,
        section: "install" as const,
        order: position(l.d.name),
        ...(l.kind === "through-uninstall" ? { from: l.c.version } : {}),
        disrupts: disrupts.get(l.d.name),
      })),
    ),
  );
  const posts = lifecycles.filter(
    (l) => l.kind === "in-place" || (l.kind === "resume" && l.section === "post_upgrade"),
  );
  steps.push(
    ...phaseSteps(
      "post_upgrade",
      posts.map((l) => ({
        component: l.d.name,
        version: l.d.version,
        metadata: l.d.metadata,
        section: "post_upgrade" as const,
        order: position(l.d.name),
        ...(l.kind === "in-place" ? { from: l.c.version } : {}),
        disrupts: disrupts.get(l.d.name),
      })),
    ),
  );
  return {
    steps: markFinal(
      steps,
      lifecycles,
      dropped.map(({ c }) => c.name),
    ),
  };
}

function reversedByUninstall(
  dropped: readonly { c: InstalledComponent; i: number }[],
): { c: InstalledComponent; i: number }[] {
  return [...dropped].sort((a, b) => a.c.metadata.uninstall.priority - b.c.metadata.uninstall.priority || b.i - a.i);
}

/** The commands of a section, in role order. */
function sectionSteps(
  phase: Phase,
  e: {
    component: string;
    version: string;
    metadata: ComponentMetadata;
    section: SectionName;
    from?: string;
    disrupts?: StepDisruption | undefined;
  },
  priority: number,
): CommandStep[] {
  const s = e.metadata[e.section];
  return ROLES.flatMap((role) =>
    s[role].map((command, index): CommandStep => ({
      ...(e.disrupts ? { disrupts: e.disrupts } : {}),
      kind: "command",
      phase,
      component: e.component,
      version: e.version,
      priority,
      section: e.section,
      role,
      index,
      command,
      shell: e.metadata.shell,
      isolated: e.metadata.isolated,
      timeoutSeconds: e.metadata.timeout_seconds,
      ...(e.from !== undefined ? { from: e.from } : {}),
    })),
  );
}

/**
 * Steps of one phase: grouped by priority (ties by `order`), each group closed by a reboot if one of its sections asks.
 */
function phaseSteps(phase: Phase, entries: readonly Entry[]): Step[] {
  const priorityOf = (e: Entry): number => e.metadata[e.section].priority;
  const sorted = [...entries].sort((a, b) => priorityOf(a) - priorityOf(b) || a.order - b.order);
  const out: Step[] = [];
  let i = 0;
  while (i < sorted.length) {
    const priority = priorityOf(sorted[i] as Entry);
    const reasons: string[] = [];
    for (; i < sorted.length && priorityOf(sorted[i] as Entry) === priority; i++) {
      const e = sorted[i] as Entry;
      out.push(...sectionSteps(phase, e, priority));
      if (e.metadata[e.section].reboot) reasons.push(`${e.component} ${e.version} ${e.section} asks for a reboot`);
      for (const t of e.then ?? []) {
        out.push(
          ...sectionSteps(
            phase,
            {
              component: e.component,
              version: t.version,
              metadata: t.metadata,
              section: t.section,
              from: t.version,
              disrupts: e.disrupts,
            },
            priority,
          ),
        );
        if (t.metadata[t.section].reboot) reasons.push(`${e.component} ${t.version} ${t.section} asks for a reboot`);
      }
      out.push(...(e.tail ?? []));
    }
    if (reasons.length > 0) {
      const reboot: RebootStep = { kind: "reboot", phase, component: "", version: "", priority, reasons };
      out.push(reboot);
    }
  }
  return out;
}

/** Marks each component's last step of the run with what it completes. */
function markFinal(steps: Step[], lifecycles: readonly Lifecycle[], dropped: readonly string[]): Step[] {
  const outcome = new Map<string, "installed" | "upgraded" | "removed">();
  for (const name of dropped) outcome.set(name, "removed");
  for (const l of lifecycles)
    outcome.set(l.d.name, l.kind === "fresh" || l.kind === "resume" ? "installed" : "upgraded");
  const last = new Map<string, number>();
  steps.forEach((s, i) => {
    if (s.kind !== "reboot") last.set(s.component, i);
  });
  return steps.map((s, i) => {
    const o = outcome.get(s.component);
    return o !== undefined && last.get(s.component) === i ? { ...s, finalizes: o } : s;
  });
}

/** The desired components by name, for {@link applyEffect}. */
export type DesiredIndex = ReadonlyMap<string, DesiredComponent>;

/**
 * What the host records once `step` has run: the lifecycle state the planner
 * reads back. `before` marks a lifecycle as started; `after` records its result.
 */
export function applyEffect(
  installed: readonly InstalledComponent[],
  step: Step,
  when: "before" | "after",
  desired: DesiredIndex,
): InstalledComponent[] {
  if (step.kind === "reboot") return [...installed];
  const i = installed.findIndex((c) => c.name === step.component);
  const current = i >= 0 ? installed[i] : undefined;
  const replace = (next: InstalledComponent | undefined): InstalledComponent[] => {
    const out = [...installed];
    if (i < 0) {
      if (next) out.push(next);
    } else if (next) out[i] = next;
    else out.splice(i, 1);
    return out;
  };
  const settle = (c: InstalledComponent): InstalledComponent => {
    if (step.finalizes === undefined || step.finalizes === "removed") return c;
    return { name: c.name, version: c.version, metadata: c.metadata, paths: c.paths };
  };
  if (when === "before") {
    if (step.kind !== "command" || !current) return [...installed];
    // pre_upgrade runs the new version's section while the old version is still the one on the host.
    if (step.section === "pre_upgrade" && current.pending === undefined)
      return replace({ ...current, pending: "upgrade" });
    if (step.section === "uninstall" && current.version === step.version && current.pending !== "remove")
      return replace({ ...current, pending: "remove" });
    return [...installed];
  }
  switch (step.kind) {
    case "remove-files":
      return current && current.version === step.version ? replace(undefined) : [...installed];
    case "files": {
      const d = desired.get(step.component);
      if (!d) return [...installed];
      return replace(
        settle({ name: d.name, version: d.version, metadata: d.metadata, paths: d.paths, pending: step.next }),
      );
    }
    case "command":
      return current && current.version === step.version ? replace(settle(current)) : [...installed];
  }
}

/** Puts installed components in template order (components the template does not name keep their place at the end). */
export function inTemplateOrder(
  installed: readonly InstalledComponent[],
  desired: readonly DesiredComponent[],
): InstalledComponent[] {
  const order = new Map(desired.map((d, i) => [d.name, i]));
  return installed
    .map((c, i) => ({ c, i }))
    .sort((a, b) => (order.get(a.c.name) ?? desired.length + a.i) - (order.get(b.c.name) ?? desired.length + b.i))
    .map(({ c }) => c);
}
