import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { type ComponentMetadata, metadataSchema } from "../content/schema";
import { PHASES } from "./events";
import {
  type DesiredComponent,
  type InstalledComponent,
  type Step,
  describeStep,
  disruptionOf,
  groupOf,
} from "./model";
import { applyEffect, inTemplateOrder, planLifecycle } from "./planner";

type SectionInput = {
  priority?: number;
  commands?: string[];
  lprecmds?: string[];
  lpstcmds?: string[];
  reboot?: boolean;
  uninstall?: boolean;
};

function meta(
  name: string,
  version: string,
  sections: Partial<Record<"install" | "uninstall" | "pre_upgrade" | "post_upgrade", SectionInput>> = {},
): ComponentMetadata {
  const def = (s: string): SectionInput => ({ commands: [`${s} ${name} ${version}`] });
  return metadataSchema.parse({
    name,
    version,
    install: { ...def("install"), ...sections.install },
    uninstall: { ...def("uninstall"), ...sections.uninstall },
    pre_upgrade: { ...def("pre_upgrade"), ...sections.pre_upgrade },
    post_upgrade: { ...def("post_upgrade"), ...sections.post_upgrade },
  });
}

const want = (m: ComponentMetadata): DesiredComponent => ({
  name: m.name,
  version: m.version,
  metadata: m,
  paths: [`/opt/${m.name}/${m.version}`],
});
const have = (m: ComponentMetadata, pending?: InstalledComponent["pending"]): InstalledComponent => ({
  ...want(m),
  ...(pending ? { pending } : {}),
});
const show = (steps: readonly Step[]): string[] =>
  steps.map((s) => `${s.phase} ${s.component}${s.component ? ` ${s.version}` : ""}: ${describeStep(s)}`);

/** Runs a plan's effects, as the executor records them. */
function simulate(
  installed: readonly InstalledComponent[],
  desired: readonly DesiredComponent[],
): InstalledComponent[] {
  const index = new Map(desired.map((d) => [d.name, d]));
  let state = [...installed];
  for (const step of planLifecycle(installed, desired).steps) {
    state = applyEffect(state, step, "before", index);
    state = applyEffect(state, step, "after", index);
  }
  return inTemplateOrder(state, desired);
}

describe("the planner", () => {
  it("installs new components: files first, then install sections by priority, ties in template order, lprecmds → commands → lpstcmds", () => {
    const a = meta("a", "1", {
      install: { priority: 50, lprecmds: ["pre a"], commands: ["cmd a"], lpstcmds: ["post a"] },
    });
    const b = meta("b", "1", { install: { priority: 10 } });
    const c = meta("c", "1", { install: { priority: 50 } });
    const plan = planLifecycle([], [want(a), want(b), want(c)]);
    assert.deepEqual(show(plan.steps), [
      "files a 1: files",
      "files b 1: files",
      "files c 1: files",
      "install b 1: install.commands[0]: install b 1",
      "install a 1: install.lprecmds[0]: pre a",
      "install a 1: install.commands[0]: cmd a",
      "install a 1: install.lpstcmds[0]: post a",
      "install c 1: install.commands[0]: install c 1",
    ]);
  });

  it("uninstalls dropped components first, ties in reverse template order, and removes their files after every uninstall command", () => {
    const a = meta("a", "1", { uninstall: { priority: 20 } });
    const b = meta("b", "1", { uninstall: { priority: 10 } });
    const c = meta("c", "1", { uninstall: { priority: 20 } });
    const keep = meta("keep", "1");
    const plan = planLifecycle([have(a), have(b), have(c), have(keep)], [want(keep)]);
    assert.deepEqual(show(plan.steps), [
      "uninstall b 1: uninstall.commands[0]: uninstall b 1",
      "uninstall c 1: uninstall.commands[0]: uninstall c 1",
      "uninstall a 1: uninstall.commands[0]: uninstall a 1",
      "uninstall b 1: remove files",
      "uninstall c 1: remove files",
      "uninstall a 1: remove files",
    ]);
  });

  it("upgrades in place: the new version's pre_upgrade, its files, then its post_upgrade", () => {
    const old = meta("s", "1");
    const next = meta("s", "2");
    assert.deepEqual(show(planLifecycle([have(old)], [want(next)]).steps), [
      "pre_upgrade s 2: pre_upgrade.commands[0]: pre_upgrade s 2",
      "files s 2: files (from 1)",
      "post_upgrade s 2: post_upgrade.commands[0]: post_upgrade s 2",
    ]);
  });

  it("upgrades through uninstall with the old version's recorded metadata, then installs fresh", () => {
    const old = meta("s", "1", { uninstall: { commands: ["recorded uninstall of 1"] } });
    const next = meta("s", "2", {
      pre_upgrade: { uninstall: true },
      uninstall: { commands: ["uninstall of 2 (must not run)"] },
    });
    assert.deepEqual(show(planLifecycle([have(old)], [want(next)]).steps), [
      "pre_upgrade s 2: pre_upgrade.commands[0]: pre_upgrade s 2",
      "pre_upgrade s 1: uninstall.commands[0]: recorded uninstall of 1",
      "pre_upgrade s 1: remove files",
      "files s 2: files",
      "install s 2: install.commands[0]: install s 2",
    ]);
  });

  it("orders the phases uninstall → pre_upgrade → files → install → post_upgrade", () => {
    const plan = planLifecycle(
      [have(meta("gone", "1")), have(meta("up", "1")), have(meta("same", "1"))],
      [want(meta("new", "1")), want(meta("up", "2")), want(meta("same", "1"))],
    );
    const phases = plan.steps.map((s) => PHASES.indexOf(s.phase));
    assert.deepEqual(
      phases,
      [...phases].sort((x, y) => x - y),
    );
    assert.deepEqual(
      [...new Set(plan.steps.map((s) => s.phase))],
      ["uninstall", "pre_upgrade", "files", "install", "post_upgrade"],
    );
    assert.equal(plan.steps.filter((s) => s.component === "same").length, 0, "an unchanged component got a step");
  });

  it("reboots once at the end of each priority group that asks, with every reason", () => {
    const a = meta("a", "1", { install: { priority: 10, reboot: true } });
    const b = meta("b", "1", { install: { priority: 10, reboot: true } });
    const c = meta("c", "1", { install: { priority: 10 } });
    const d = meta("d", "1", { install: { priority: 20, reboot: true } });
    const e = meta("e", "1", { install: { priority: 30 } });
    const steps = planLifecycle([], [a, b, c, d, e].map(want)).steps.filter((s) => s.phase === "install");
    assert.deepEqual(show(steps), [
      "install a 1: install.commands[0]: install a 1",
      "install b 1: install.commands[0]: install b 1",
      "install c 1: install.commands[0]: install c 1",
      "install : reboot (a 1 install asks for a reboot; b 1 install asks for a reboot)",
      "install d 1: install.commands[0]: install d 1",
      "install : reboot (d 1 install asks for a reboot)",
      "install e 1: install.commands[0]: install e 1",
    ]);
  });

  it("counts an old version's uninstall reboot in its pre_upgrade group", () => {
    const old = meta("s", "1", { uninstall: { reboot: true } });
    const next = meta("s", "2", { pre_upgrade: { uninstall: true, priority: 5 } });
    const reboot = planLifecycle([have(old)], [want(next)]).steps.find((s) => s.kind === "reboot");
    assert.deepEqual(reboot && { phase: reboot.phase, priority: reboot.priority }, {
      phase: "pre_upgrade",
      priority: 5,
    });
  });

  it("plans nothing when the host already runs the template", () => {
    const t = [meta("a", "1"), meta("b", "2")].map(want);
    assert.deepEqual(
      planLifecycle(
        t.map((d) => ({ ...d })),
        t,
      ).steps,
      [],
    );
  });

  it("finishes a lifecycle a failed run left part-way", () => {
    const m = meta("a", "1");
    assert.deepEqual(show(planLifecycle([have(m, "install")], [want(m)]).steps), [
      "files a 1: files",
      "install a 1: install.commands[0]: install a 1",
    ]);
    assert.deepEqual(show(planLifecycle([have(m, "post_upgrade")], [want(m)]).steps), [
      "files a 1: files",
      "post_upgrade a 1: post_upgrade.commands[0]: post_upgrade a 1",
    ]);
    assert.deepEqual(show(planLifecycle([have(m, "remove")], [want(m)]).steps), [
      "files a 1: files",
      "install a 1: install.commands[0]: install a 1",
    ]);
  });

  it("uninstalls everything when nothing is desired", () => {
    const steps = planLifecycle([have(meta("a", "1")), have(meta("b", "1"))], []).steps;
    assert.deepEqual(show(steps), [
      "uninstall b 1: uninstall.commands[0]: uninstall b 1",
      "uninstall a 1: uninstall.commands[0]: uninstall a 1",
      "uninstall b 1: remove files",
      "uninstall a 1: remove files",
    ]);
  });

  it("marks each component's last step with what it completes", () => {
    const steps = planLifecycle(
      [have(meta("gone", "1")), have(meta("up", "1"))],
      [want(meta("up", "2")), want(meta("new", "1", { install: { commands: [] } }))],
    ).steps;
    const finals = steps.filter((s) => s.finalizes).map((s) => `${s.component} ${s.finalizes} at ${describeStep(s)}`);
    assert.deepEqual(finals, [
      "gone removed at remove files",
      "new installed at files",
      "up upgraded at post_upgrade.commands[0]: post_upgrade up 2",
    ]);
  });
});

// Random templates over a small pool of components, each version with random metadata.
const NAMES = ["a", "b", "c", "d", "e"];
const section = fc.record({
  priority: fc.constantFrom(10, 20, 100),
  commands: fc.array(fc.constantFrom("x", "y"), { maxLength: 2 }),
  lprecmds: fc.array(fc.constant("pre"), { maxLength: 1 }),
  reboot: fc.boolean(),
  uninstall: fc.boolean(),
});
const component = (name: string): fc.Arbitrary<ComponentMetadata> =>
  fc
    .record({
      version: fc.constantFrom("1", "2", "3"),
      install: section,
      uninstall: section,
      pre_upgrade: section,
      post_upgrade: section,
    })
    .map((r) => {
      // Only pre_upgrade has an `uninstall` switch.
      const plain = ({ uninstall: _u, ...s }: SectionInput): SectionInput => s;
      return meta(name, r.version, {
        install: plain(r.install),
        uninstall: plain(r.uninstall),
        pre_upgrade: r.pre_upgrade,
        post_upgrade: plain(r.post_upgrade),
      });
    });
const template = fc
  .shuffledSubarray(NAMES)
  .chain((names) => fc.tuple(...names.map(component)).map((ms) => ms.map(want)));

describe("the planner's properties (fast-check)", () => {
  it("any template A then any template B ends with exactly B's components at B's versions", () => {
    fc.assert(
      fc.property(template, template, (a, b) => {
        const afterA = simulate([], a);
        assert.deepEqual(
          afterA.map((c) => `${c.name}@${c.version}${c.pending ?? ""}`),
          a.map((d) => `${d.name}@${d.version}`),
        );
        const afterB = simulate(afterA, b);
        assert.deepEqual(
          afterB.map((c) => `${c.name}@${c.version}${c.pending ?? ""}`),
          b.map((d) => `${d.name}@${d.version}`),
        );
      }),
      { numRuns: 500, seed: 9 },
    );
  });

  it("gives an unchanged component no step, and plans nothing for the same template twice", () => {
    fc.assert(
      fc.property(template, template, (a, b) => {
        const steps = planLifecycle(simulate([], a), b).steps;
        for (const d of b) {
          if (a.some((x) => x.name === d.name && x.version === d.version))
            assert.equal(steps.filter((s) => s.component === d.name).length, 0, `${d.name} is unchanged`);
        }
        assert.deepEqual(planLifecycle(simulate(simulate([], a), b), b).steps, []);
      }),
      { numRuns: 300, seed: 10 },
    );
  });

  it("keeps phases in order, priorities non-decreasing within a phase's commands, and at most one reboot per group", () => {
    fc.assert(
      fc.property(template, template, (a, b) => {
        const steps = planLifecycle(simulate([], a), b).steps;
        const phases = steps.map((s) => PHASES.indexOf(s.phase));
        assert.deepEqual(
          phases,
          [...phases].sort((x, y) => x - y),
        );
        for (const phase of PHASES) {
          const priorities = steps.filter((s) => s.phase === phase && s.kind !== "remove-files").map((s) => s.priority);
          assert.deepEqual(
            priorities,
            [...priorities].sort((x, y) => x - y),
            `${phase} priorities`,
          );
        }
        const reboots = steps.filter((s) => s.kind === "reboot").map(groupOf);
        assert.equal(new Set(reboots).size, reboots.length);
      }),
      { numRuns: 300, seed: 11 },
    );
  });
});

describe("the planner after a run that failed part-way (fast-check)", () => {
  it("re-planning from whatever a failed run recorded still ends with exactly the new template", () => {
    fc.assert(
      fc.property(template, template, template, fc.nat(), (a, b, c, cut) => {
        const start = simulate([], a);
        const steps = planLifecycle(start, b).steps;
        const index = new Map(b.map((d) => [d.name, d]));
        let state = [...start];
        // Run the plan for B up to a failing step: its "before" effect happens, its "after" does not.
        const failAt = steps.length === 0 ? 0 : cut % steps.length;
        steps.forEach((step, i) => {
          if (i > failAt) return;
          state = applyEffect(state, step, "before", index);
          if (i < failAt) state = applyEffect(state, step, "after", index);
        });
        const end = simulate(state, c);
        assert.deepEqual(
          end.map((x) => `${x.name}@${x.version}${x.pending ?? ""}`),
          c.map((d) => `${d.name}@${d.version}`),
        );
      }),
      { numRuns: 500, seed: 12 },
    );
  });
});

describe("what a plan disrupts", () => {
  const disrupting = (
    name: string,
    version: string,
    disrupts: Partial<Record<"install" | "upgrade" | "uninstall", string[]>>,
    sections: Parameters<typeof meta>[2] = {},
  ): ComponentMetadata => metadataSchema.parse({ ...meta(name, version, sections), disrupts });
  const marked = (steps: readonly Step[]): string[] =>
    steps.map((s) => `${s.component || "reboot"} ${describeStep(s)}: ${disruptionOf(s) ?? "-"}`);

  it("marks every step of a lifecycle whose metadata says it disrupts, and nothing else", () => {
    const runtime = disrupting("runtime", "2", { upgrade: ["runtime"] });
    const quiet = meta("quiet", "2");
    const plan = planLifecycle([have(meta("runtime", "1")), have(meta("quiet", "1"))], [want(runtime), want(quiet)]);
    assert.deepEqual(marked(plan.steps), [
      "runtime pre_upgrade.commands[0]: pre_upgrade runtime 2: runtime 2 upgrade restarts the container runtime",
      "quiet pre_upgrade.commands[0]: pre_upgrade quiet 2: -",
      "runtime files (from 1): runtime 2 upgrade restarts the container runtime",
      "quiet files (from 1): -",
      "runtime post_upgrade.commands[0]: post_upgrade runtime 2: runtime 2 upgrade restarts the container runtime",
      "quiet post_upgrade.commands[0]: post_upgrade quiet 2: -",
    ]);
  });

  it("takes an upgrade's word from the new version, a removal's from what the host recorded, and a reboot always disrupts", () => {
    const installed = [
      have(disrupting("cni", "1", { upgrade: ["network"] })),
      have(disrupting("old", "1", { uninstall: ["kubelet"] })),
    ];
    const desired = [
      want(meta("cni", "2", { install: { reboot: true } })),
      want(disrupting("feature", "1", {}, { install: { reboot: true } })),
    ];
    const plan = planLifecycle(installed, desired);
    const reasons = [...new Set(plan.steps.flatMap((s) => disruptionOf(s) ?? []))];
    assert.deepEqual(reasons, [
      "old 1 uninstall restarts the kubelet",
      "the host restarts (feature 1 install asks for a reboot)",
    ]);
    assert.ok(
      plan.steps.filter((s) => s.component === "cni").every((s) => s.disrupts === undefined),
      "cni 2 does not say its upgrade disrupts: the old version's word does not count",
    );
  });

  it("an upgrade through an uninstall adds what the old version's uninstall disrupts", () => {
    const plan = planLifecycle(
      [have(disrupting("rt", "1", { uninstall: ["runtime"] }))],
      [want(disrupting("rt", "2", { upgrade: ["kubelet"] }, { pre_upgrade: { uninstall: true } }))],
    );
    assert.deepEqual(
      [...new Set(plan.steps.map((s) => disruptionOf(s)))],
      // The old version's uninstall runs in the upgrade's group, under its own version.
      [
        "rt 2 upgrade restarts the kubelet and the container runtime",
        "rt 1 upgrade restarts the kubelet and the container runtime",
      ],
    );
  });

  it("a plan of components that disrupt nothing has no disruptive step", () => {
    const plan = planLifecycle([have(meta("a", "1"))], [want(meta("a", "2")), want(meta("b", "1"))]);
    assert.equal(plan.steps.filter((s) => disruptionOf(s) !== undefined).length, 0);
  });
});
