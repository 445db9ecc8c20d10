/**
 * `WindowsNodePool` under Pulumi's mock runtime (through `winfleet render`'s
 * runner): what reaches Azure, and the options each resource is registered
 * with (read through a transformation on the component, as the engine would
 * receive them).
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { readFleet } from "../../infra/program";
import { type Rendered, renderStack } from "../../infra/render";
import { STACKS_DIR } from "../../infra/stack-file";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";
import { BLOB_READER_ROLE, WindowsNodePool, poolIdentity } from "../../components/windows-node-pool";
import { scratchDir } from "../support";

const scratch = scratchDir("winfleet-pool-");

type Pool = Record<string, unknown>;
let n = 0;
/** A shipped stack with its first pool edited, as a stack file of its own. */
function stackWith(base: string, edit: (pool: Pool, fleet: Record<string, unknown>) => void): string {
  const doc = parseYaml(readFileSync(join(STACKS_DIR, `Pulumi.${base}.yaml`), "utf8")) as { config: Record<string, unknown> };
  const fleet = doc.config["winfleet:fleet"] as { pools: Pool[] } & Record<string, unknown>;
  edit(fleet.pools[0] as Pool, fleet);
  const file = join(scratch, `Pulumi.pool${++n}.yaml`);
  writeFileSync(file, toYaml(doc));
  return file;
}

/** What a resource was registered with, besides its inputs. */
interface Registration {
  readonly type: string;
  readonly deleteBeforeReplace: boolean;
  readonly dependsOn: string[];
}

/** Renders one pool of the stack (its first), the content at a fixed blob URL, and every child's options. */
async function renderPool(stack: string): Promise<{ rendered: Rendered; options: Map<string, Registration> }> {
  let options = new Map<string, Registration>();
  const program = (): Promise<{ pools: Record<string, never> }> => {
    options = new Map();
    const names = new Map<pulumi.Resource, string>();
    const config = new pulumi.Config("winfleet");
    const fleet = readFleet(config);
    const pool = fleet.pools[0];
    if (pool?.kind !== "azure" || !fleet.agent || fleet.content.publish.to !== "blob") throw new Error(`${stack}: not an Azure pool publishing to blob`);
    const publish = fleet.content.publish;
    const record: pulumi.ResourceTransformation = (a) => {
      names.set(a.resource, a.name);
      const deps = a.opts.dependsOn;
      const list = (Array.isArray(deps) ? deps : deps ? [deps] : []) as pulumi.Resource[];
      options.set(a.name, { type: a.type, deleteBeforeReplace: (a.opts as pulumi.CustomResourceOptions).deleteBeforeReplace === true, dependsOn: list.map((r) => names.get(r) ?? "?") });
      return undefined;
    };
    new WindowsNodePool(
      pool.name,
      {
        fleet,
        pool,
        bootstrap: { node: DEFAULT_NODE_RUNTIME, agent: { ...fleet.agent.bundle, version: fleet.agent.version } },
        content: { url: `https://${publish.storageAccount}.blob.core.windows.net/${publish.container}/content-c.tgz`, sha256: "c".repeat(64), auth: publish.auth, ...(publish.auth === "sas" ? { sas: pulumi.secret("sv=x&sig=y") } : {}) },
        join: { variables: { KUBE_API_SERVER: "https://10.20.0.4:6443" }, secrets: { KUBE_BOOTSTRAP_TOKEN: config.requireSecret(fleet.cluster?.join.tokenSecret ?? "") } },
        adminPassword: config.requireSecret(pool.adminPasswordSecret),
      },
      { transformations: [record] },
    );
    return Promise.resolve({ pools: {} });
  };
  const rendered = await renderStack(stack, { program });
  return { rendered, options };
}

const inputsOf = (r: Rendered, type: string): Record<string, unknown>[] => r.resources.filter((x) => x.type === type).map((x) => x.inputs);
const bootstrapOf = (userData: unknown): string => Buffer.from(String(userData), "base64").toString("utf8");

describe("a scale set pool", () => {
  it("carries the bootstrap extension in its model (so instances of a Manual scale set run it), as a Uniform scale set", async () => {
    const { rendered } = await renderPool("dev");
    assert.equal(inputsOf(rendered, "azure-native:compute:VirtualMachineScaleSetExtension").length, 0, "a separate extension only changes the model of a Manual scale set");
    const [vmss] = inputsOf(rendered, "azure-native:compute:VirtualMachineScaleSet") as { orchestrationMode: string; upgradePolicy: { mode: string }; tags: Record<string, string>; virtualMachineProfile: { extensionProfile: { extensions: Record<string, unknown>[] } } }[];
    assert.ok(vmss);
    assert.equal(vmss.orchestrationMode, "Uniform");
    assert.equal(vmss.upgradePolicy.mode, "Manual");
    const extensions = vmss.virtualMachineProfile.extensionProfile.extensions;
    assert.equal(extensions.length, 1);
    const [ext] = extensions;
    assert.deepEqual(
      { name: ext?.name, publisher: ext?.publisher, type: ext?.type, settings: ext?.settings },
      { name: "winfleet-bootstrap", publisher: "Microsoft.Compute", type: "CustomScriptExtension", settings: {} },
    );
    assert.equal(ext?.forceUpdateTag, vmss.tags["winfleet-bootstrap-sha256"], "it re-runs exactly when the bootstrap changes");
    assert.deepEqual(ext?.protectedSettings, { commandToExecute: "[secret]" }, "the command (with the join token) is a secret");
  });
});

describe("nodes that read their content with a managed identity", () => {
  for (const mode of ["vmss", "vms"] as const) {
    it(`${mode}: get a user-assigned identity whose role assignment exists before any machine, and ask IMDS for that identity`, async () => {
      const { rendered, options } = await renderPool(stackWith("dev", (p) => void (p.mode = mode)));
      const [uai] = inputsOf(rendered, "azure-native:managedidentity:UserAssignedIdentity") as { resourceName: string; resourceGroupName: string }[];
      assert.deepEqual(uai && [uai.resourceName, uai.resourceGroupName], ["winfleet-win-nodes", "rg-winfleet-dev"]);
      const roles = rendered.resources.filter((x) => x.type === "azure-native:authorization:RoleAssignment");
      assert.equal(roles.length, 1, "one assignment for the pool's identity");
      const role = roles[0]?.inputs as { principalId: string; principalType: string; roleDefinitionId: string; scope: string };
      assert.equal(role.principalId, "win-identity-principal", "the identity's principal");
      assert.equal(role.principalType, "ServicePrincipal");
      assert.ok(role.roleDefinitionId.endsWith(BLOB_READER_ROLE));
      assert.match(role.scope, /\/storageAccounts\/winfleetdevcontent$/);
      const machineType = mode === "vmss" ? "azure-native:compute:VirtualMachineScaleSet" : "azure-native:compute:VirtualMachine";
      const machines = [...options.entries()].filter(([, o]) => o.type === machineType);
      assert.equal(machines.length, mode === "vmss" ? 1 : 2);
      for (const [name, o] of machines) assert.deepEqual(o.dependsOn, [roles[0]?.name], `${name} waits for the role assignment`);
      for (const m of inputsOf(rendered, machineType) as { identity: { type: string; userAssignedIdentities: string[] }; userData?: string; virtualMachineProfile?: { userData: string } }[]) {
        assert.deepEqual(m.identity, { type: "UserAssigned", userAssignedIdentities: ["win-identity-id"] });
        const script = bootstrapOf(m.userData ?? m.virtualMachineProfile?.userData);
        const id = poolIdentity(rendered.stack.fleet.pools[0] as Parameters<typeof poolIdentity>[0]).id;
        assert.equal(id, "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-winfleet-dev/providers/Microsoft.ManagedIdentity/userAssignedIdentities/winfleet-win-nodes");
        assert.ok(script.includes(`&msi_res_id=${encodeURIComponent(id)}'`), "the token is asked for with the pool's identity");
      }
    });
  }

  it("read the agent bundle with the identity when it is on the same storage account, anonymously elsewhere", async () => {
    const same = await renderPool("dev");
    const [vmss] = inputsOf(same.rendered, "azure-native:compute:VirtualMachineScaleSet") as { virtualMachineProfile: { userData: string } }[];
    const script = bootstrapOf(vmss?.virtualMachineProfile.userData);
    assert.match(script, /Get-Pinned -Url 'https:\/\/winfleetdevcontent\.blob\.core\.windows\.net\/releases\/winfleet-agent-0\.1\.0\.tgz' .* -Headers \(Get-StorageHeaders\)\n/);
    const elsewhere = await renderPool(stackWith("dev", (_, f) => void ((f.agent as { bundle: { url: string } }).bundle.url = "https://github.com/example/winfleet/releases/download/v0.1.0/winfleet-agent-0.1.0.tgz")));
    const [other] = inputsOf(elsewhere.rendered, "azure-native:compute:VirtualMachineScaleSet") as { virtualMachineProfile: { userData: string } }[];
    assert.match(bootstrapOf(other?.virtualMachineProfile.userData), /Get-Pinned -Url 'https:\/\/github\.com\/[^\n]*-Path "\$root\\downloads\\agent-0\.1\.0\.tgz"\n/);
  });
});

describe("explicitly named machines", () => {
  it("are deleted before they are replaced (a replacement with the same name cannot be created next to them)", async () => {
    for (const stack of ["dev", stackWith("dev", (p) => void (p.mode = "vms")), "rke2"]) {
      const { options } = await renderPool(stack);
      const named = [...options.entries()].filter(([, o]) => /:(VirtualMachineScaleSet|VirtualMachine|UserAssignedIdentity)$/.test(o.type));
      assert.ok(named.length > 0, stack);
      for (const [name, o] of named) assert.equal(o.deleteBeforeReplace, true, `${stack}: ${name}`);
    }
  });

  it("a pool that reads with a SAS keeps no identity assignment and does not wait on one", async () => {
    const { rendered, options } = await renderPool("rke2");
    assert.equal(inputsOf(rendered, "azure-native:authorization:RoleAssignment").length, 0);
    assert.equal(inputsOf(rendered, "azure-native:managedidentity:UserAssignedIdentity").length, 0);
    for (const [name, o] of options) if (o.type === "azure-native:compute:VirtualMachine") assert.deepEqual(o.dependsOn, [], name);
  });
});
