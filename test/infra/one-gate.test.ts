/**
 * The one gate, under Pulumi's mock runtime, for the pool kinds that cannot run here (Azure
 * `vmss` and `vms`, and Windows hosts over SSH): a new template version, a new agent version or
 * a rotated secret leaves every machine's bootstrap as it was deployed — the extension's
 * forceUpdateTag and its protected command, a BYO host's bootstrap run and the copies it reads —
 * so only the upgrader DaemonSet moves versions; a bootstrap that does something new re-runs, a
 * pool's `maxUnavailable` machines at a time. (The same through the real engine, on sandbox hosts
 * over SSH: test/cluster/byo-ssh.test.ts.)
 */
import assert from "node:assert/strict";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { projectRoot } from "../../agent/common/project-root";
import { fleetProgram } from "../../infra/program";
import { type Registered, renderStack } from "../../infra/render";
import { STACKS_DIR } from "../../infra/stack-file";
import { scratchDir } from "../support";

const scratch = scratchDir("winfleet-one-gate-");

/** The shipped content with a 1.1.1 of every template beside its 1.1.0, so a stack can bump templateVersion. */
const CONTENT = ((): string => {
  const dir = join(scratch, "content");
  cpSync(join(projectRoot(), "content"), dir, { recursive: true });
  for (const name of ["win2019", "win2022", "rke2-windows"]) {
    const t = JSON.parse(readFileSync(join(dir, "templates", `${name}-1.1.0.json`), "utf8")) as { version: string };
    writeFileSync(join(dir, "templates", `${name}-1.1.1.json`), JSON.stringify({ ...t, version: "1.1.1" }, null, 2));
  }
  return dir;
})();

type Fleet = Record<string, unknown> & {
  pools: Record<string, unknown>[];
  content: Record<string, unknown>;
  agent: { version: string; bundle: { url: string; sha256: string } };
  upgrader?: Record<string, unknown>;
};
let n = 0;
/**
 * A shipped stack, edited, as a stack file of its own reading the content above: under the same stack name (a
 * directory each), since the stack's name is part of what its nodes are labelled with.
 */
function stackFrom(base: string, ...edits: ((fleet: Fleet) => void)[]): string {
  const doc = parseYaml(readFileSync(join(STACKS_DIR, `Pulumi.${base}.yaml`), "utf8")) as {
    config: Record<string, unknown>;
  };
  const fleet = doc.config["winfleet:fleet"] as Fleet;
  fleet.content.dir = CONTENT;
  for (const edit of edits) edit(fleet);
  const dir = join(scratch, String(++n));
  mkdirSync(dir);
  const file = join(dir, `Pulumi.${base}.yaml`);
  writeFileSync(file, toYaml(doc));
  return file;
}

const templateBump = (f: Fleet): void => void (f.content.templateVersion = "1.1.1");
const agentBump = (f: Fleet): void => {
  f.agent.version = "0.1.1";
  f.agent.bundle = { url: f.agent.bundle.url.replace("0.1.0", "0.1.1"), sha256: "b".repeat(64) };
};
const vms =
  (count: number, maxUnavailable?: number) =>
  (f: Fleet): void => {
    Object.assign(f.pools[0] ?? {}, { mode: "vms", count, ...(maxUnavailable ? { maxUnavailable } : {}) });
  };

interface Registration extends Registered {
  readonly ignoreChanges: readonly string[];
  readonly dependsOn: readonly string[];
}

/** The whole program for a stack file, every resource with its inputs (secrets included) and options. */
async function render(file: string, secrets?: Record<string, string>): Promise<Map<string, Registration>> {
  const options = new Map<string, { ignoreChanges: string[]; dependsOn: string[] }>();
  const names = new Map<pulumi.Resource, string>();
  // Inside a root stack, as under the engine, so a stack transformation sees every registration's options.
  const program = async () => {
    let outputs: Awaited<ReturnType<typeof fleetProgram>> | undefined;
    await pulumi.runtime.runInPulumiStack(async () => {
      pulumi.runtime.registerStackTransformation((a) => {
        names.set(a.resource, a.name);
        const deps = a.opts.dependsOn;
        const list = (Array.isArray(deps) ? deps : deps ? [deps] : []) as pulumi.Resource[];
        options.set(a.name, {
          ignoreChanges: a.opts.ignoreChanges ?? [],
          dependsOn: list.map((r) => names.get(r) ?? "?"),
        });
        return undefined;
      });
      outputs = await fleetProgram();
      return undefined;
    });
    if (!outputs) throw new Error("the program returned nothing");
    return outputs;
  };
  const rendered = await renderStack(file, { program, ...(secrets ? { secrets } : {}) });
  return new Map(
    rendered.raw.map((r) => [
      r.name,
      {
        ...r,
        ignoreChanges: options.get(r.name)?.ignoreChanges ?? [],
        dependsOn: options.get(r.name)?.dependsOn ?? [],
      },
    ]),
  );
}

const ofType = (r: Map<string, Registration>, type: string): Registration[] =>
  [...r.values()].filter((x) => x.type === type);
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;
/** A value with Pulumi's secret wrappers taken off, at any depth. */
function unwrap(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(unwrap);
  if (v === null || typeof v !== "object") return v;
  const o = v as Record<string, unknown>;
  if ("4dabf18193072939515e22adb298388d" in o && "value" in o) return unwrap(o.value);
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, unwrap(x)]));
}

/** The extension of each machine: its forceUpdateTag and protected command, by name. */
function extensions(r: Map<string, Registration>): Record<string, { tag: unknown; settings: unknown }> {
  const out: Record<string, { tag: unknown; settings: unknown }> = {};
  // The bootstrap's extensions (a VM's VMAccess extension, which sets the admin password, is not one).
  for (const e of ofType(r, "azure-native:compute:VirtualMachineExtension").filter((x) =>
    x.name.endsWith("-bootstrap"),
  ))
    out[e.name] = { tag: e.inputs.forceUpdateTag, settings: plain(unwrap(e.inputs.protectedSettings)) };
  for (const s of ofType(r, "azure-native:compute:VirtualMachineScaleSet")) {
    const profile = unwrap(s.inputs.virtualMachineProfile) as {
      extensionProfile: { extensions: Record<string, unknown>[] };
    };
    const ext = profile.extensionProfile.extensions[0] ?? {};
    out[s.name] = { tag: ext.forceUpdateTag, settings: plain(ext.protectedSettings) };
  }
  return out;
}

const ROTATED = {
  bootstrapTokenSecret: "rotatedtoken0001",
  calicoKubeconfig: "apiVersion: v1\nkind: Config\n# rotated\n",
};

describe("the one gate on Azure pools (mock runtime)", () => {
  for (const [mode, edit] of [
    ["vmss", (): void => undefined],
    ["vms", vms(3)],
  ] as const) {
    it(`${mode}: a templateVersion or agent bump, or rotating a Key Vault secret, changes no extension (nothing re-runs)`, async () => {
      const base = extensions(await render(stackFrom("dev", edit)));
      assert.ok(Object.keys(base).length >= 1);
      for (const [what, changed] of [
        ["templateVersion 1.1.1", await render(stackFrom("dev", edit, templateBump))],
        ["agent 0.1.1", await render(stackFrom("dev", edit, agentBump))],
        [
          "a rotated calicoKubeconfig",
          await render(stackFrom("dev", edit), { calicoKubeconfig: ROTATED.calicoKubeconfig }),
        ],
      ] as const)
        assert.deepEqual(extensions(changed), base, `${what}: forceUpdateTag and the protected command stay`);
    });

    it(`${mode}: rotating the join token leaves forceUpdateTag as it was`, async () => {
      const base = extensions(await render(stackFrom("dev", edit)));
      const rotated = extensions(
        await render(stackFrom("dev", edit), { bootstrapTokenSecret: ROTATED.bootstrapTokenSecret }),
      );
      for (const [name, e] of Object.entries(base)) assert.equal(rotated[name]?.tag, e.tag, name);
    });
  }

  it("a bootstrap that does something new (a node label) changes forceUpdateTag", async () => {
    const base = extensions(await render(stackFrom("dev", vms(2))));
    const labelled = extensions(
      await render(stackFrom("dev", vms(2), (f) => void ((f.pools[0] as { labels: object }).labels = { a: "b" }))),
    );
    for (const [name, e] of Object.entries(base)) assert.notEqual(labelled[name]?.tag, e.tag, name);
  });

  it("vms: machines and their extensions go maxUnavailable at a time (each waits for the one that many before)", async () => {
    const r = await render(stackFrom("dev", vms(5, 2)));
    const deps = (name: string) => (r.get(name)?.dependsOn ?? []).filter((d) => d.endsWith("-bootstrap"));
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((i) => deps(`win-${i}-bootstrap`)),
      [[], [], ["win-1-bootstrap"], ["win-2-bootstrap"], ["win-3-bootstrap"]],
    );
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((i) => deps(`win-${i}`)),
      [[], [], ["win-1-bootstrap"], ["win-2-bootstrap"], ["win-3-bootstrap"]],
      "a new image replaces the machines in the same batches",
    );
  });
});

describe("the one gate on Windows hosts over SSH (mock runtime)", () => {
  /** What reaches a host: the command resources by name, with the inputs they do not hold once created. */
  const remote = (r: Map<string, Registration>): Record<string, unknown> =>
    Object.fromEntries(
      [...r.values()]
        .filter((x) => x.type.startsWith("command:"))
        .map((x) => [
          x.name,
          plain(Object.fromEntries(Object.entries(x.inputs).filter(([k]) => !x.ignoreChanges.includes(k)))),
        ]),
    );

  it("a templateVersion or agent bump, or a rotated secret, registers the same commands with the same live inputs", async () => {
    const base = await render(stackFrom("byoh"));
    const names = Object.keys(remote(base)).sort();
    assert.ok(
      names.some((x) => /-bootstrap-[0-9a-f]{12}$/.test(x)),
      names.join(", "),
    );
    for (const [what, changed] of [
      ["templateVersion 1.1.1", await render(stackFrom("byoh", templateBump))],
      ["agent 0.1.1", await render(stackFrom("byoh", agentBump))],
      ["a rotated join token", await render(stackFrom("byoh"), { bootstrapTokenSecret: ROTATED.bootstrapTokenSecret })],
    ] as const)
      assert.deepEqual(remote(changed), remote(base), what);
    // What the held inputs are: a bootstrap run holds its secrets and script, a copy its source.
    const run = [...base.values()].find((x) => /-bootstrap-[0-9a-f]{12}$/.test(x.name));
    assert.ok(run?.ignoreChanges.includes("stdin") && run.ignoreChanges.includes("connection"));
  });

  it("a bootstrap change names a new run on every host, the pool's maxUnavailable hosts at a time", async () => {
    const three = (f: Fleet): void => {
      const pool = f.pools[0] as { hosts: Record<string, unknown>[]; maxUnavailable?: number };
      pool.hosts = [1, 2, 3].map((i) => ({ ...pool.hosts[0], name: `winlab-0${i}`, address: `192.168.50.2${i}` }));
      pool.maxUnavailable = 2;
    };
    const base = await render(stackFrom("byoh", three));
    const changed = await render(
      stackFrom("byoh", three, (f) => void ((f.pools[0] as { labels: object }).labels = {})),
    );
    const runs = (r: Map<string, Registration>) =>
      [...r.keys()].filter((x) => /-bootstrap-[0-9a-f]{12}$/.test(x)).sort();
    assert.equal(runs(base).length, 3);
    for (const name of runs(changed)) assert.ok(!runs(base).includes(name), `${name} is a new run`);
    const after = runs(changed).map((x) =>
      (changed.get(x)?.dependsOn ?? []).filter((d) => /-bootstrap-[0-9a-f]{12}$/.test(d)),
    );
    assert.deepEqual(
      after.map((d) => d.length),
      [0, 0, 1],
      "the third host waits for the first",
    );
  });
});
