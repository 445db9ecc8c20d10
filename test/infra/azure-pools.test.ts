/**
 * Azure pools through the whole program under Pulumi's mock runtime: names of
 * their own per stack and pool (computer names, scale sets, identities, the Key
 * Vault secret), scale sets past one placement group, an admin password that
 * can be rotated, the explicit providers every resource is registered with, and
 * a component's dependencies reaching the resources it creates.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { runInPulumiStack } from "@pulumi/pulumi/runtime/stack";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { fleetProgram } from "../../infra/program";
import { type Rendered, renderStack } from "../../infra/render";
import { STACKS_DIR } from "../../infra/stack-file";
import { scratchDir } from "../support";

const REPO = join(__dirname, "..", "..");
// The VMAccess extension's name on a VM (components/windows-node-pool.ts), as Azure lists it.
const PASSWORD_EXTENSION = "winfleet-admin-password";
const scratch = scratchDir("winfleet-azure-pools-");

type Fleet = Record<string, unknown> & { pools: Record<string, unknown>[] };

/** A shipped stack, edited, written as `Pulumi.<name>.yaml` (the stack's name) in a folder of its own. */
function stackFile(base: string, name: string, edit: (fleet: Fleet) => void = () => undefined): string {
  const doc = parseYaml(readFileSync(join(STACKS_DIR, `Pulumi.${base}.yaml`), "utf8")) as {
    config: Record<string, unknown>;
  };
  const fleet = doc.config["winfleet:fleet"] as Fleet;
  (fleet.content as Record<string, unknown>).dir = join(REPO, "content");
  edit(fleet);
  const file = join(scratch, `Pulumi.${name}.yaml`);
  writeFileSync(file, toYaml(doc));
  return file;
}

const inputsOf = (r: Rendered, type: string): Record<string, unknown>[] =>
  r.resources.filter((x) => x.type === type).map((x) => x.inputs);
const one = <T>(r: Rendered, type: string): T => {
  const all = inputsOf(r, type);
  assert.equal(all.length, 1, type);
  return all[0] as T;
};

describe("an Azure pool's names", () => {
  it("are its own: two pools whose names share a prefix never share a computer name, a scale set or an identity", async () => {
    const r = await renderStack(
      stackFile("dev", "names", (f) => {
        const pool = f.pools[0] as Record<string, unknown>;
        f.pools = [
          { ...pool, name: "production-a" },
          { ...pool, name: "production-b" },
        ];
      }),
    );
    const sets = inputsOf(r, "azure-native:compute:VirtualMachineScaleSet") as {
      vmScaleSetName: string;
      virtualMachineProfile: { osProfile: { computerNamePrefix: string } };
    }[];
    const prefixes = sets.map((s) => s.virtualMachineProfile.osProfile.computerNamePrefix);
    assert.equal(new Set(prefixes).size, 2, `computer name prefixes ${prefixes.join(", ")}`);
    for (const p of prefixes)
      assert.match(p, /^prod[0-9a-f]{5}$/, "nine characters: the pool's first letters and a digest");
    assert.equal(new Set(sets.map((s) => s.vmScaleSetName)).size, 2);
    const identities = inputsOf(r, "azure-native:managedidentity:UserAssignedIdentity").map((i) => i.resourceName);
    assert.equal(new Set(identities).size, 2, identities.join(", "));
    assert.deepEqual(r.outputs.pools["production-a"]?.nodeNames, [`${prefixes[0]}*`]);
  });

  it("are the stack's: the same pool in two stacks gets another scale set, computer names, identity and Key Vault secret", async () => {
    const names = async (stack: string) => {
      const r = await renderStack(stackFile("dev", stack));
      const set = one<{ vmScaleSetName: string; virtualMachineProfile: { osProfile: { computerNamePrefix: string } } }>(
        r,
        "azure-native:compute:VirtualMachineScaleSet",
      );
      return {
        machines: [set.vmScaleSetName, set.virtualMachineProfile.osProfile.computerNamePrefix],
        identity: one<{ resourceName: string }>(r, "azure-native:managedidentity:UserAssignedIdentity").resourceName,
        secret: one<{ secretName: string }>(r, "azure-native:keyvault:Secret").secretName,
      };
    };
    // Individual VMs' names differ by stack too (components/azure-names.test.ts).
    const [a, b] = [await names("east"), await names("west")];
    assert.notEqual(a.secret, b.secret, "one stack's destroy (a soft delete) never blocks the other's secret");
    assert.match(a.secret, /^winfleet-east-win-[0-9a-f]{5}$/, "named for the stack and pool");
    assert.notEqual(a.identity, b.identity);
    for (const m of a.machines) assert.ok(!b.machines.includes(m), `${m} in both stacks`);
  });

  it("keep individual VMs' computer names within 15 characters, and never all digits", async () => {
    const r = await renderStack(
      stackFile("rke2", "digits", (f) => Object.assign(f.pools[0]!, { name: "0123456789-windows-nodes", count: 12 })),
    );
    const names = inputsOf(r, "azure-native:compute:VirtualMachine").map(
      (v) => (v.osProfile as { computerName: string }).computerName,
    );
    assert.equal(new Set(names).size, 12);
    for (const n of names) {
      assert.ok(n.length <= 15, n);
      assert.match(n, /^[a-z][a-z0-9-]*$/, n);
    }
  });
});

describe("a scale set", () => {
  const placement = async (count: number): Promise<unknown> =>
    one<{ singlePlacementGroup?: boolean }>(
      await renderStack(stackFile("dev", `count${count}`, (f) => void (f.pools[0]!.count = count))),
      "azure-native:compute:VirtualMachineScaleSet",
    ).singlePlacementGroup;

  it("of more than 100 machines spans placement groups (one holds at most 100)", async () => {
    assert.equal(await placement(101), false);
  });

  it("of 100 or fewer is left as Azure makes it", async () => {
    assert.equal(await placement(100), undefined);
  });
});

/** Resource options as the engine receives them: a stack transformation sees each resource's own and its parents'. */
async function renderWithOptions(
  file: string,
  secrets?: Record<string, string>,
): Promise<{ r: Rendered; options: Map<string, { type: string; dependsOn: string[]; ignoreChanges: string[] }> }> {
  let options = new Map<string, { type: string; dependsOn: string[]; ignoreChanges: string[] }>();
  let names = new Map<pulumi.Resource, string>();
  const program = async (): ReturnType<typeof fleetProgram> => {
    options = new Map();
    names = new Map();
    let outputs: Awaited<ReturnType<typeof fleetProgram>> = { pools: {} };
    // Stack transformations need the stack resource the engine's entry makes: run the program in one, as it does.
    await runInPulumiStack(async () => {
      registerTransformation();
      outputs = await fleetProgram();
      return outputs;
    });
    return outputs;
  };
  const registerTransformation = (): void =>
    pulumi.runtime.registerStackTransformation((a) => {
      names.set(a.resource, a.name);
      const deps = a.opts.dependsOn;
      const list = (Array.isArray(deps) ? deps : deps ? [deps] : []) as pulumi.Resource[];
      options.set(a.name, {
        type: a.type,
        dependsOn: list.map((d) => names.get(d) ?? "?"),
        ignoreChanges: a.opts.ignoreChanges ?? [],
      });
      return undefined;
    });
  const r = await renderStack(file, { program, ...(secrets ? { secrets } : {}) });
  return { r, options };
}

// The dev sample with its options, rendered once for the tests that read them.
let devRendered: ReturnType<typeof renderWithOptions> | undefined;
const devWithOptions = (): ReturnType<typeof renderWithOptions> =>
  (devRendered ??= renderWithOptions(stackFile("dev", "dev-options")));

describe("the admin password", () => {
  it("vms: never changed on a VM (Azure refuses it), but set through the VMAccess extension, after the bootstrap's", async () => {
    const file = stackFile("rke2", "password");
    const { r, options } = await renderWithOptions(file, { adminPassword: "Old-Passw0rd!" });
    const vms = [...options.entries()].filter(([, o]) => o.type === "azure-native:compute:VirtualMachine");
    assert.equal(vms.length, 3);
    for (const [name, o] of vms) assert.deepEqual(o.ignoreChanges, ["osProfile.adminPassword"], name);
    const access = r.resources.filter(
      (x) =>
        x.type === "azure-native:compute:VirtualMachineExtension" && x.inputs.vmExtensionName === PASSWORD_EXTENSION,
    );
    assert.equal(access.length, 3, "one per VM");
    for (const a of access) {
      assert.deepEqual(
        [a.inputs.publisher, a.inputs.type, a.inputs.settings, a.inputs.protectedSettings],
        ["Microsoft.Compute", "VMAccessAgent", { UserName: "winfleet" }, { Password: "[secret]" }],
      );
      assert.ok(
        options.get(a.name)?.dependsOn.includes(a.name.replace(/-password$/, "-bootstrap")),
        "Azure runs one extension operation on a VM at a time",
      );
    }
    const raw = (rr: Rendered) =>
      rr.raw
        .filter((x) => x.inputs.vmExtensionName === PASSWORD_EXTENSION)
        .map((x) => JSON.stringify(x.inputs.protectedSettings));
    assert.match(raw(r)[0] ?? "", /Old-Passw0rd!/, "the extension carries the password the stack holds");
    const rotated = await renderStack(file, { secrets: { adminPassword: "New-Passw0rd!" } });
    assert.match(raw(rotated)[0] ?? "", /New-Passw0rd!/, "and a rotated one changes its settings, so it runs again");
  });

  it("vmss: never changed in the scale set's model either", async () => {
    const { options } = await devWithOptions();
    const [set] = [...options.values()].filter((o) => o.type === "azure-native:compute:VirtualMachineScaleSet");
    assert.deepEqual(set?.ignoreChanges, ["virtualMachineProfile.osProfile.adminPassword"]);
  });
});

describe("the providers", () => {
  it("deploy every Azure resource through one explicit provider in the stack's subscription, and the cluster side through the stack's kube context", async () => {
    const file = stackFile("dev", "providers", (f) => {
      (f.cluster as Record<string, unknown>).kubeContext = "dev-admin";
    });
    const r = await renderStack(file);
    const azure = one<{ subscriptionId: string }>(r, "pulumi:providers:azure-native");
    assert.equal(azure.subscriptionId, "00000000-0000-0000-0000-000000000000", "the subnet's and the vault's");
    const kube = one<{ context?: string; clusterIdentifier: string }>(r, "pulumi:providers:kubernetes");
    assert.deepEqual([kube.context, kube.clusterIdentifier], ["dev-admin", "dev"]);
    assert.ok(!("kubeconfig" in kube), "the render shows no path of the machine it ran on");
    const custom = r.resources.filter((x) => !x.type.startsWith("winfleet:") && !x.type.startsWith("pulumi:"));
    assert.ok(custom.length > 10);
    for (const x of custom) {
      const pkg = x.type.split(":")[0];
      const expected = pkg === "azure-native" ? "azure-native::azure" : `${pkg}::cluster`;
      assert.match(x.provider ?? "(default)", new RegExp(`::pulumi:providers:${expected}::`), `${x.type} ${x.name}`);
    }
  });

  it("follow the current kube context only when the stack names none", async () => {
    const r = await renderStack(
      stackFile("byoh", "no-context", (f) => void delete (f.cluster as Record<string, unknown>).kubeContext),
    );
    assert.equal(one<{ context?: string }>(r, "pulumi:providers:kubernetes").context, undefined);
    assert.equal(inputsOf(r, "pulumi:providers:azure-native").length, 0, "nothing in Azure, no Azure provider");
  });
});

describe("a component's dependencies", () => {
  it("reach the resources it creates: machines after the cluster side and the content, content after the namespace", async () => {
    const { options } = await devWithOptions();
    const of = (type: string): { dependsOn: string[] }[] => [...options.values()].filter((o) => o.type === type);
    for (const set of of("azure-native:compute:VirtualMachineScaleSet"))
      for (const dep of ["cluster", "content"])
        assert.ok(set.dependsOn.includes(dep), `the scale set waits for ${dep}`);
    for (const blob of of("azure-native:storage:Blob")) assert.ok(blob.dependsOn.includes("cluster"));
    for (const ds of of("kubernetes:apps/v1:DaemonSet"))
      for (const dep of ["cluster", "content"]) assert.ok(ds.dependsOn.includes(dep), `the upgrader waits for ${dep}`);
  });

  it("hold for BYO hosts too: the bootstrap runs once the token and the content exist", async () => {
    const { options } = await renderWithOptions(stackFile("byoh", "byo-order"));
    const prepare = [...options.entries()].filter(([name]) => /-bootstrap-[0-9a-f]{12}$/.test(name));
    assert.equal(prepare.length, 2);
    for (const [name, o] of prepare)
      for (const dep of ["cluster", "content"]) assert.ok(o.dependsOn.includes(dep), `${name} waits for ${dep}`);
  });
});
