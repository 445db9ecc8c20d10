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
import { contentAccountOf, nodeConfigOf, readFleet } from "../../infra/program";
import { type Rendered, renderStack } from "../../infra/render";
import { STACKS_DIR } from "../../infra/stack-file";
import { COMMAND_LIMIT, decodeExtensionCommand } from "../../components/extension-command";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";
import { BLOB_READER_ROLE, SECRETS_USER_ROLE, WindowsNodePool } from "../../components/windows-node-pool";
import { poolIdentity, poolVaultSecret } from "../../components/azure-names";
import { realKubeconfig, scratchDir } from "../support";

const scratch = scratchDir("winfleet-pool-");

type Pool = Record<string, unknown>;
let n = 0;
/** A shipped stack with its first pool edited, as a stack file of its own. */
function stackWith(base: string, edit: (pool: Pool, fleet: Record<string, unknown>) => void): string {
  const doc = parseYaml(readFileSync(join(STACKS_DIR, `Pulumi.${base}.yaml`), "utf8")) as {
    config: Record<string, unknown>;
  };
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

// kube-proxy's service-account token, as large as a real one (a JWT of about 1 KB).
const KUBE_PROXY_TOKEN = `eyJhbGciOiJSUzI1NiIsImtpZCI6IjFhMmIzYyJ9.${"e".repeat(700)}.${"s".repeat(342)}`;

/** Renders one pool of the stack (its first), the content at a fixed blob URL, and every child's options. */
async function renderPool(
  stack: string,
  secrets?: Record<string, string>,
): Promise<{ rendered: Rendered; options: Map<string, Registration> }> {
  let options = new Map<string, Registration>();
  const program = (): Promise<{ pools: Record<string, never> }> => {
    options = new Map();
    const names = new Map<pulumi.Resource, string>();
    const config = new pulumi.Config("winfleet");
    const fleet = readFleet(config);
    const pool = fleet.pools[0];
    if (pool?.kind !== "azure" || !fleet.agent || fleet.content.publish.to !== "blob")
      throw new Error(`${stack}: not an Azure pool publishing to blob`);
    const publish = fleet.content.publish;
    const record: pulumi.ResourceTransformation = (a) => {
      names.set(a.resource, a.name);
      const deps = a.opts.dependsOn;
      const list = (Array.isArray(deps) ? deps : deps ? [deps] : []) as pulumi.Resource[];
      options.set(a.name, {
        type: a.type,
        deleteBeforeReplace: (a.opts as pulumi.CustomResourceOptions).deleteBeforeReplace === true,
        dependsOn: list.map((r) => names.get(r) ?? "?"),
      });
      return undefined;
    };
    new WindowsNodePool(
      pool.name,
      {
        stack: pulumi.getStack(),
        node: nodeConfigOf(fleet),
        pool: { ...pool, batch: 1 },
        bootstrap: { node: DEFAULT_NODE_RUNTIME, agent: { ...fleet.agent.bundle, version: fleet.agent.version } },
        content: {
          url: `https://${publish.storageAccount}.blob.core.windows.net/${publish.container}/content-c.tgz`,
          sha256: "c".repeat(64),
          auth: publish.auth,
          ...(publish.auth === "sas" ? { sas: pulumi.secret("sv=x&sig=y") } : {}),
          storageAccount: contentAccountOf(fleet) ?? { resourceGroup: "", name: "" },
        },
        join: {
          variables: { KUBE_API_SERVER: "https://10.20.0.4:6443" },
          secrets: {
            [fleet.cluster?.join.method === "rke2" ? "RKE2_TOKEN" : "KUBE_BOOTSTRAP_TOKEN"]: config.requireSecret(
              fleet.cluster?.join.tokenSecret ?? "",
            ),
            ...(fleet.cluster?.join.method === "kubeadm" ? { KUBE_PROXY_TOKEN: pulumi.secret(KUBE_PROXY_TOKEN) } : {}),
            ...Object.fromEntries(
              Object.entries(fleet.content.secrets).map(([variable, key]) => [variable, config.requireSecret(key)]),
            ),
          },
        },
        ...(fleet.content.keyVault ? { keyVault: { id: fleet.content.keyVault } } : {}),
        adminPassword: config.requireSecret(pool.adminPasswordSecret),
      },
      { transformations: [record] },
    );
    return Promise.resolve({ pools: {} });
  };
  const rendered = await renderStack(stack, { program, ...(secrets ? { secrets } : {}) });
  return { rendered, options };
}

const inputsOf = (r: Rendered, type: string): Record<string, unknown>[] =>
  r.resources.filter((x) => x.type === type).map((x) => x.inputs);
const bootstrapOf = (userData: unknown): string => Buffer.from(String(userData), "base64").toString("utf8");

describe("a scale set pool", () => {
  it("carries the bootstrap extension in its model (so instances of a Manual scale set run it), as a Uniform scale set", async () => {
    const { rendered } = await renderPool("dev");
    assert.equal(
      inputsOf(rendered, "azure-native:compute:VirtualMachineScaleSetExtension").length,
      0,
      "a separate extension only changes the model of a Manual scale set",
    );
    const [vmss] = inputsOf(rendered, "azure-native:compute:VirtualMachineScaleSet") as {
      orchestrationMode: string;
      upgradePolicy: { mode: string };
      tags: Record<string, string>;
      virtualMachineProfile: { extensionProfile: { extensions: Record<string, unknown>[] } };
    }[];
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
    assert.equal(
      ext?.forceUpdateTag,
      vmss.tags["winfleet-bootstrap-epoch"],
      "it re-runs exactly when what the bootstrap does changes",
    );
    assert.deepEqual(
      ext?.protectedSettings,
      { commandToExecute: "[secret]" },
      "the command (with the join token) is a secret",
    );
  });
});

describe("nodes that read their content with a managed identity", () => {
  for (const mode of ["vmss", "vms"] as const) {
    it(`${mode}: get a user-assigned identity whose role assignment exists before any machine, and ask IMDS for that identity`, async () => {
      const { rendered, options } = await renderPool(stackWith("dev", (p) => void (p.mode = mode)));
      const [uai] = inputsOf(rendered, "azure-native:managedidentity:UserAssignedIdentity") as {
        resourceName: string;
        resourceGroupName: string;
      }[];
      const stack = rendered.stack.stack;
      const pool = rendered.stack.fleet.pools[0] as Parameters<typeof poolIdentity>[1];
      assert.deepEqual(uai && [uai.resourceName, uai.resourceGroupName], [
        poolIdentity(stack, pool).name,
        "rg-winfleet-dev",
      ]);
      const roles = rendered.resources.filter(
        (x) =>
          x.type === "azure-native:authorization:RoleAssignment" &&
          String(x.inputs.roleDefinitionId).endsWith(BLOB_READER_ROLE),
      );
      assert.equal(roles.length, 1, "one content assignment for the pool's identity");
      const role = roles[0]?.inputs as {
        principalId: string;
        principalType: string;
        roleDefinitionId: string;
        scope: string;
      };
      assert.equal(role.principalId, "win-identity-principal", "the identity's principal");
      assert.equal(role.principalType, "ServicePrincipal");
      assert.ok(role.roleDefinitionId.endsWith(BLOB_READER_ROLE));
      assert.match(role.scope, /\/storageAccounts\/winfleetdevcontent$/);
      const machineType =
        mode === "vmss" ? "azure-native:compute:VirtualMachineScaleSet" : "azure-native:compute:VirtualMachine";
      const machines = [...options.entries()].filter(([, o]) => o.type === machineType);
      assert.equal(machines.length, mode === "vmss" ? 1 : 2);
      for (const [name, o] of machines)
        assert.deepEqual(
          o.dependsOn?.filter((d) => !d.endsWith("-bootstrap")),
          [roles[0]?.name, "win-secrets", "win-secrets-reader"],
          `${name} waits for the role assignments and the secret`,
        );
      for (const m of inputsOf(rendered, machineType) as {
        identity: { type: string; userAssignedIdentities: string[] };
        userData?: string;
        virtualMachineProfile?: { userData: string };
      }[]) {
        assert.deepEqual(m.identity, { type: "UserAssigned", userAssignedIdentities: ["win-identity-id"] });
        const script = bootstrapOf(m.userData ?? m.virtualMachineProfile?.userData);
        const id = poolIdentity(stack, pool).id;
        assert.equal(
          id,
          `/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-winfleet-dev/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${poolIdentity(stack, pool).name}`,
        );
        assert.ok(
          script.includes(`&msi_res_id=${encodeURIComponent(id)}'`),
          "the token is asked for with the pool's identity",
        );
      }
    });
  }

  it("read the agent bundle with the identity when it is on the same storage account, anonymously elsewhere", async () => {
    const same = await renderPool("dev");
    const [vmss] = inputsOf(same.rendered, "azure-native:compute:VirtualMachineScaleSet") as {
      virtualMachineProfile: { userData: string };
    }[];
    const script = bootstrapOf(vmss?.virtualMachineProfile.userData);
    assert.match(
      script,
      /\$winfleetTarget = '\{"agent":\{"url":"https:\/\/winfleetdevcontent\.blob\.core\.windows\.net\/releases\/winfleet-agent-0\.1\.0\.tgz"/,
    );
    assert.match(script, /Get-Pinned -Url \$winfleetTarget\.agent\.url .* -Headers \(Get-StorageHeaders\)\n/);
    const elsewhere = await renderPool(
      stackWith(
        "dev",
        (_, f) =>
          void ((f.agent as { bundle: { url: string } }).bundle.url =
            "https://github.com/example/winfleet/releases/download/v0.1.0/winfleet-agent-0.1.0.tgz"),
      ),
    );
    const [other] = inputsOf(elsewhere.rendered, "azure-native:compute:VirtualMachineScaleSet") as {
      virtualMachineProfile: { userData: string };
    }[];
    const otherScript = bootstrapOf(other?.virtualMachineProfile.userData);
    assert.match(otherScript, /\$winfleetTarget = '\{"agent":\{"url":"https:\/\/github\.com\//);
    assert.match(otherScript, /Get-Pinned -Url \$winfleetTarget\.agent\.url [^\n]*-Path \$agentArchive\n/);
  });
});

describe("a pool's larger secrets (a real kubeconfig, kube-proxy's token)", () => {
  const kubeconfig = realKubeconfig();
  // A stack that gives kube-proxy a kubeconfig of its own (a content secret), beside the token ClusterJoin passes.
  const SECRETS = { kubeProxyKubeconfig: kubeconfig };
  const withKubeconfig = (f: Record<string, unknown>): void =>
    void ((f.content as { secrets?: Record<string, string> }).secrets = {
      KUBE_PROXY_KUBECONFIG: "kubeProxyKubeconfig",
    });
  const commandOf = (r: Rendered, type: string): string => {
    const raw = r.raw.find((x) => x.type === type)?.inputs as Record<string, unknown>;
    const unwrap = (v: unknown): unknown =>
      v !== null && typeof v === "object" && "value" in v && Object.keys(v).length === 2 ? v.value : v;
    const ext = type.endsWith("VirtualMachineScaleSet")
      ? (unwrap(raw.virtualMachineProfile) as { extensionProfile: { extensions: { protectedSettings: unknown }[] } })
          .extensionProfile.extensions[0]?.protectedSettings
      : raw.protectedSettings;
    return (unwrap(ext) as { commandToExecute: string }).commandToExecute;
  };

  it("is a real kubeconfig of more than 4 KB", () => {
    assert.ok(kubeconfig.length > 4096, `${kubeconfig.length}`);
    assert.match(kubeconfig, /client-key-data: LS0tLS1CRUdJTi/);
  });

  for (const mode of ["vmss", "vms"] as const) {
    it(`${mode}: leave the command line under ${COMMAND_LIMIT} characters with the join token alone, and wait in the pool's Key Vault secret`, async () => {
      const { rendered } = await renderPool(
        stackWith("dev", (p, f) => void ((p.mode = mode), withKubeconfig(f))),
        SECRETS,
      );
      const command = commandOf(
        rendered,
        mode === "vmss"
          ? "azure-native:compute:VirtualMachineScaleSet"
          : "azure-native:compute:VirtualMachineExtension",
      );
      assert.ok(command.length <= COMMAND_LIMIT, `${command.length}`);
      const script = decodeExtensionCommand(command);
      assert.ok(
        !script.includes(kubeconfig) && !script.includes(JSON.stringify(kubeconfig).slice(1, -1)),
        "the kubeconfig is not in the command",
      );
      assert.ok(!script.includes(KUBE_PROXY_TOKEN), "nor kube-proxy's token");
      assert.match(
        script,
        /-Secrets '\{"KUBE_BOOTSTRAP_TOKEN":"placeholder-bootstrapTokenSecret"\}'\n/,
        "the join token, and no version of the secret: the node reads its latest, so a rotation changes no setting",
      );
      const secret = rendered.raw.find((x) => x.type === "azure-native:keyvault:Secret")?.inputs as {
        resourceGroupName: string;
        vaultName: string;
        secretName: string;
        properties: { value: unknown; contentType: string };
      };
      const name = poolVaultSecret(rendered.stack.fleet.content.keyVault ?? "", rendered.stack.stack, "win").name;
      assert.match(
        name,
        new RegExp(`^winfleet-${rendered.stack.stack}-win-[0-9a-f]{5}$`),
        "the stack's and the pool's",
      );
      assert.deepEqual(
        [secret.resourceGroupName, secret.vaultName, secret.secretName],
        ["rg-winfleet-dev", "kv-winfleet-dev", name],
      );
      const shown = rendered.resources.find((x) => x.type === "azure-native:keyvault:Secret")?.inputs as {
        properties: { value: unknown };
      };
      assert.equal(shown.properties.value, "[secret]", "the value is a Pulumi secret");
      assert.deepEqual(JSON.parse((secret.properties.value as { value: string }).value), {
        KUBE_PROXY_KUBECONFIG: kubeconfig,
        KUBE_PROXY_TOKEN,
      });
      const [machine] = inputsOf(
        rendered,
        mode === "vmss" ? "azure-native:compute:VirtualMachineScaleSet" : "azure-native:compute:VirtualMachine",
      ) as { userData?: string; virtualMachineProfile?: { userData: string } }[];
      const bootstrap = bootstrapOf(machine?.userData ?? machine?.virtualMachineProfile?.userData);
      assert.ok(
        bootstrap.includes(`'https://kv-winfleet-dev.vault.azure.net/secrets/${name}?api-version=7.4'`),
        "the bootstrap reads that secret",
      );
      assert.ok(
        bootstrap.includes("resource=https%3A%2F%2Fvault.azure.net&msi_res_id="),
        "with a token of the pool's identity",
      );
    });
  }

  it("never reach a plain setting or a rendered file", async () => {
    const { rendered } = await renderPool(
      stackWith("dev", (_, f) => withKubeconfig(f)),
      SECRETS,
    );
    const lines = kubeconfig.split("\n").filter((l) => l.length > 60);
    for (const [file, text] of rendered.files)
      for (const l of [...lines, KUBE_PROXY_TOKEN]) assert.ok(!text.includes(l.trim()), `${file} holds a secret`);
  });

  it("are readable by the pool's identity alone: Key Vault Secrets User scoped to exactly that secret", async () => {
    const { rendered, options } = await renderPool(
      stackWith("dev", (_, f) => withKubeconfig(f)),
      SECRETS,
    );
    const roles = rendered.resources.filter(
      (x) =>
        x.type === "azure-native:authorization:RoleAssignment" &&
        String(x.inputs.roleDefinitionId).endsWith(SECRETS_USER_ROLE),
    );
    assert.equal(roles.length, 1);
    const role = roles[0]?.inputs as {
      principalId: string;
      principalType: string;
      roleDefinitionId: string;
      scope: string;
    };
    assert.deepEqual(role, {
      principalId: "win-identity-principal",
      principalType: "ServicePrincipal",
      roleDefinitionId: `/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/roleDefinitions/${SECRETS_USER_ROLE}`,
      // The pool's own secret, named by stack and pool (azure-names.ts).
      scope: role.scope,
    });
    assert.match(
      role.scope,
      /^\/subscriptions\/0{8}-0{4}-0{4}-0{4}-0{12}\/resourceGroups\/rg-winfleet-dev\/providers\/Microsoft\.KeyVault\/vaults\/kv-winfleet-dev\/secrets\/winfleet-[a-z0-9]+-win-[0-9a-f]{5}$/,
    );
    assert.deepEqual(options.get(roles[0]?.name ?? "")?.dependsOn, ["win-secrets"], "assigned once the secret exists");
  });

  it("give a pool that reads its content with a SAS an identity for the secret alone", async () => {
    const stack = stackWith("dev", (_, f) => {
      (f.content as { publish: Record<string, unknown> }).publish = {
        to: "blob",
        resourceGroup: "rg-winfleet-dev",
        storageAccount: "winfleetdevcontent",
        auth: "sas",
        sasExpiry: "2027-06-30T00:00:00Z",
      };
      (f.agent as { bundle: { url: string } }).bundle.url =
        "https://github.com/example/winfleet/releases/download/v0.1.0/winfleet-agent-0.1.0.tgz";
      withKubeconfig(f);
    });
    const { rendered } = await renderPool(stack, SECRETS);
    const roles = rendered.resources
      .filter((x) => x.type === "azure-native:authorization:RoleAssignment")
      .map((x) => String(x.inputs.roleDefinitionId).split("/").pop());
    assert.deepEqual(roles, [SECRETS_USER_ROLE]);
    const [vmss] = inputsOf(rendered, "azure-native:compute:VirtualMachineScaleSet") as {
      identity: { type: string };
    }[];
    assert.equal(vmss?.identity.type, "UserAssigned");
  });

  it("are refused, naming the stack key, without a Key Vault", async () => {
    await assert.rejects(
      renderPool(stackWith("dev", (_, f) => void delete (f.content as Record<string, unknown>).keyVault)),
      /winfleet:fleet\.content\.keyVault/,
    );
  });
});

describe("explicitly named machines", () => {
  it("are deleted before they are replaced (a replacement with the same name cannot be created next to them)", async () => {
    for (const stack of ["dev", stackWith("dev", (p) => void (p.mode = "vms")), "rke2"]) {
      const { options } = await renderPool(stack);
      const named = [...options.entries()].filter(([, o]) =>
        /:(VirtualMachineScaleSet|VirtualMachine|UserAssignedIdentity)$/.test(o.type),
      );
      assert.ok(named.length > 0, stack);
      for (const [name, o] of named) assert.equal(o.deleteBeforeReplace, true, `${stack}: ${name}`);
    }
  });

  it("a pool that reads with a SAS keeps no identity assignment and does not wait on one", async () => {
    const { rendered, options } = await renderPool("rke2");
    assert.equal(inputsOf(rendered, "azure-native:authorization:RoleAssignment").length, 0);
    assert.equal(inputsOf(rendered, "azure-native:managedidentity:UserAssignedIdentity").length, 0);
    for (const [name, o] of options)
      if (o.type === "azure-native:compute:VirtualMachine")
        assert.deepEqual(
          o.dependsOn.filter((d) => !d.endsWith("-bootstrap")),
          [],
          `${name} waits for no assignment (only for the machine before it: the pool's batches)`,
        );
  });
});
