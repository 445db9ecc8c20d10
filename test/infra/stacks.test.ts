/**
 * The shipped stacks under Pulumi's mock runtime: what each deploys, every
 * Kubernetes object against the Kubernetes OpenAPI schema, every PowerShell
 * script parsed, secrets nowhere in plain settings or files, and upgrader pod
 * templates that change exactly when a rollout is due.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import { decodeExtensionCommand } from "../../components/extension-command";
import { secretKeys } from "../../infra/config";
import { type Rendered, renderStack } from "../../infra/render";
import { STACKS_DIR, readStackFile } from "../../infra/stack-file";
import { scratchDir, validateKubernetesObject } from "../support";

const REPO = join(__dirname, "..", "..");
// Pulumi's marker for a secret value in resource inputs (the SDK's specialSigKey / specialSecretSig).
const SIG = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

const scratch = scratchDir("winfleet-stacks-");

/** A unique, recognisable value for every secure key a stack names. */
async function uniqueSecrets(stack: string): Promise<Record<string, string>> {
  const { fleet } = await readStackFile(stack);
  return Object.fromEntries(secretKeys(fleet).map((k) => [k, `s3cr3t-${k}-${randomBytes(8).toString("hex")}`]));
}

const count = (r: Rendered, type: string): number => r.resources.filter((x) => x.type === type).length;
const typesOf = (r: Rendered): Set<string> => new Set(r.resources.map((x) => x.type));
const kube = (r: Rendered, kind: string, name: RegExp): boolean =>
  r.resources.some(
    (x) => x.type.endsWith(`:${kind}`) && name.test(String((x.inputs.metadata as { name?: string } | undefined)?.name)),
  );

// Strings that are not inside a value Pulumi marks secret.
function plainStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) plainStrings(v, out);
  else if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    if (o[SIG] === SECRET_SIG) return out;
    for (const v of Object.values(o)) plainStrings(v, out);
  }
  return out;
}

// A readable form of a string that may hold base64 (userData, data: URLs, ConfigMap binaryData).
function decodedForms(s: string): string[] {
  const forms = [s];
  for (const m of s.matchAll(/[A-Za-z0-9+/]{40,}={0,2}/g)) {
    const bytes = Buffer.from(m[0], "base64");
    forms.push(bytes.toString("latin1"), bytes.toString("utf16le")); // -EncodedCommand is UTF-16LE
  }
  return forms;
}

const rendered = new Map<string, Rendered>();
const secrets = new Map<string, Record<string, string>>();

before(async () => {
  for (const stack of ["dev", "rke2", "byoh", "local"]) {
    const values = await uniqueSecrets(stack);
    secrets.set(stack, values);
    rendered.set(stack, await renderStack(stack, { secrets: values }));
  }
});

const get = (stack: string): Rendered => rendered.get(stack) as Rendered;

describe("what each stack deploys", () => {
  it("dev: one scale set with its bootstrap extension in its model, a managed identity reading the content blob, and the kubeadm cluster side", () => {
    const r = get("dev");
    assert.equal(count(r, "azure-native:compute:VirtualMachineScaleSet"), 1);
    assert.equal(
      count(r, "azure-native:compute:VirtualMachineScaleSetExtension"),
      0,
      "the extension is in the scale set's model",
    );
    assert.equal(count(r, "azure-native:storage:Blob"), 1);
    assert.equal(count(r, "azure-native:managedidentity:UserAssignedIdentity"), 1);
    assert.equal(
      count(r, "azure-native:authorization:RoleAssignment"),
      2,
      "content reader, and reader of the pool's Key Vault secret",
    );
    assert.equal(count(r, "azure-native:keyvault:Secret"), 1, "the nodes' larger secrets");
    assert.equal(count(r, "azure-native:compute:VirtualMachine"), 0);
    for (const t of [
      "winfleet:index:WindowsNodePool",
      "winfleet:index:ContentBundle",
      "winfleet:index:ClusterJoin",
      "winfleet:index:AgentUpgrader",
    ])
      assert.ok(typesOf(r).has(t), t);
    assert.ok(!typesOf(r).has("winfleet:index:WinsUpgrader"), "no wins upgrader without the chart's winsConfigs");
    const vmss = r.resources.find((x) => x.type === "azure-native:compute:VirtualMachineScaleSet")?.inputs as {
      sku: { capacity: number };
      identity: { type: string };
      tags: Record<string, string>;
      virtualMachineProfile: {
        userData: string;
        extensionProfile: { extensions: { forceUpdateTag: string; protectedSettings: unknown; settings: unknown }[] };
      };
    };
    assert.equal(vmss.sku.capacity, 2);
    assert.equal(vmss.identity.type, "UserAssigned");
    assert.deepEqual(
      [vmss.tags["winfleet-template"], vmss.tags["winfleet-template-version"], vmss.tags["winfleet-agent-version"]],
      ["win2022", "1.1.0", "0.1.0"],
    );
    const ext = vmss.virtualMachineProfile.extensionProfile.extensions[0] as {
      forceUpdateTag: string;
      protectedSettings: unknown;
      settings: unknown;
    };
    assert.equal(
      ext.forceUpdateTag,
      vmss.tags["winfleet-bootstrap-epoch"],
      "the extension re-runs exactly when the bootstrap changes",
    );
    assert.deepEqual(ext.protectedSettings, { commandToExecute: "[secret]" });
    assert.deepEqual(ext.settings, {});
    const bootstrap = Buffer.from(vmss.virtualMachineProfile.userData, "base64").toString("utf8");
    assert.match(bootstrap, /win2022/);
    assert.ok(r.files.has("bootstrap/win-vmss.ps1"));
    const token = r.resources.find((x) => x.type === "kubernetes:core/v1:Secret" && x.name.includes("bootstrap-token"))
      ?.inputs as { metadata: { namespace: string }; type: string };
    assert.deepEqual([token.metadata.namespace, token.type], ["kube-system", "bootstrap.kubernetes.io/token"]);
    assert.ok(
      kube(r, "ServiceAccount", /^winfleet-kube-proxy$/) && kube(r, "ClusterRoleBinding", /^winfleet:dev:kube-proxy$/),
      "kube-proxy's own identity",
    );
    assert.match(bootstrap, /'KUBE_PROXY_TOKEN'/, "the node is told to expect kube-proxy's token among its secrets");
    assert.ok(
      kube(r, "ServiceAccount", /^winfleet-calico-node$/) &&
        kube(r, "ClusterRoleBinding", /^winfleet:dev:calico-node$/) &&
        kube(r, "RoleBinding", /^winfleet:dev:calico-node-kubeadm-config$/),
      "Calico's own identity",
    );
    assert.match(bootstrap, /'CALICO_TOKEN'/, "the node is told to expect Calico's token among its secrets");
    assert.equal(count(r, "kubernetes:apps/v1:DaemonSet"), 1);
  });

  it("rke2: one VM, NIC and extension per node, content read with a SAS kept in a Secret, the RKE2 token as the node's secret", () => {
    const r = get("rke2");
    assert.equal(count(r, "azure-native:compute:VirtualMachine"), 3);
    assert.equal(count(r, "azure-native:network:NetworkInterface"), 3);
    assert.equal(
      count(r, "azure-native:compute:VirtualMachineExtension"),
      6,
      "the bootstrap's, and VMAccess's for the password",
    );
    assert.equal(count(r, "azure-native:compute:VirtualMachineScaleSet"), 0);
    assert.equal(count(r, "azure-native:authorization:RoleAssignment"), 0, "a SAS, not the identity, reads the blob");
    assert.ok(kube(r, "Secret", /^winfleet-content-sas$/), "the upgrader pods read the SAS from a Secret");
    assert.ok(!kube(r, "Secret", /^bootstrap-token-/), "RKE2 joins with its own token");
    assert.deepEqual(
      r.resources.filter((x) => x.type === "kubernetes:core/v1:Secret").map((x) => x.name),
      ["content-sas"],
      "the agent token is the nodes' alone: no Secret in the cluster holds it",
    );
    const vm = r.resources.find((x) => x.type === "azure-native:compute:VirtualMachine")?.inputs as {
      tags: Record<string, string>;
    };
    assert.equal(vm.tags["winfleet-template"], "rke2-windows");
  });

  it("byoh: per host the content and the bootstrap copied (CopyToRemote) and run over SSH, pinning the host's key, nothing in Azure", () => {
    const r = get("byoh");
    assert.equal(count(r, "winfleet:index:ByoWindowsHost"), 2);
    assert.equal(
      count(r, "command:remote:Command"),
      6,
      "per host: its registration (uninstall), the upload directory made private, and the bootstrap run",
    );
    assert.equal(count(r, "command:remote:CopyToRemote"), 4, "per host: the content archive and the bootstrap");
    assert.equal(count(r, "command:remote:CopyFile"), 0, "the deprecated CopyFile is gone");
    assert.ok(![...typesOf(r)].some((t) => t.startsWith("azure-native:")));
    const run = r.resources.find((x) => /^lab-winlab-01-bootstrap-[0-9a-f]{12}$/.test(x.name))?.inputs as {
      create: string;
      stdin: string;
      connection: Record<string, unknown>;
    };
    assert.match(run.create, /-File "C:\\ProgramData\\winfleet\\upload\\bootstrap\.ps1" -SecretsFromStdin$/);
    assert.equal(run.stdin, "[secret]");
    assert.equal(run.connection.privateKey, "[secret]");
    assert.match(String(run.connection.hostKey), /^ssh-ed25519 AAAA/, "the host's key is pinned");
    const agent = r.resources.find((x) => x.name === "lab-winlab-01-agent")?.inputs as { delete: string };
    assert.match(agent.delete, /-EncodedCommand /, "leaving the stack uninstalls winfleet from the host");
    assert.ok(kube(r, "ConfigMap", /^winfleet-content-[0-9a-f]{16}$/), "upgrades reach the hosts through a ConfigMap");
  });

  it("local: nothing at all (winfleet local up runs it)", () => {
    assert.equal(get("local").resources.length, 0);
  });

  it("local with a cluster: the cluster side for its hosts (join, content, an upgrader), and no machine", async () => {
    const dir = join(scratch, "local-cluster");
    cpSync(STACKS_DIR, dir, { recursive: true });
    const doc = parseYaml(readFileSync(join(dir, "Pulumi.local.yaml"), "utf8")) as {
      config: Record<string, Record<string, unknown>>;
    };
    const fleet = doc.config["winfleet:fleet"] as Record<string, unknown>;
    (fleet.content as Record<string, unknown>).dir = join(REPO, "content");
    fleet.cluster = {
      name: "local",
      join: {
        method: "kubeadm",
        apiServer: "https://127.0.0.1:6443",
        caCertHash: `sha256:${"a".repeat(64)}`,
        tokenId: "loc4l1",
        tokenSecret: "bootstrapTokenSecret",
      },
    };
    fleet.upgrader = { image: "winfleet-agent:local" };
    writeFileSync(join(dir, "Pulumi.local.yaml"), toYaml(doc));
    await assert.rejects(
      renderStack("local", { dir }),
      /agent/,
      "a cluster needs the agent version its upgraders carry",
    );
    fleet.agent = { version: "0.1.0", bundle: { url: "https://artifacts.example.test/a.tgz", sha256: "0".repeat(64) } };
    writeFileSync(join(dir, "Pulumi.local.yaml"), toYaml(doc));
    const r = await renderStack("local", { dir });
    const types = new Set(r.resources.map((x) => x.type));
    assert.ok(types.has("kubernetes:apps/v1:DaemonSet"), "an upgrader DaemonSet for the pool");
    assert.ok(kube(r, "Secret", /^bootstrap-token-[a-z0-9]{6}$/), "the bootstrap tokens the hosts join with");
    assert.ok(kube(r, "ConfigMap", /^winfleet-content-[0-9a-f]{16}$/), "the content the upgraders apply");
    assert.ok(
      ![...types].some((t) => t.startsWith("azure-native:") || t.startsWith("command:")),
      "no machine is provisioned",
    );
  });
});

describe("what the stacks render", () => {
  it("validates every Kubernetes object against the Kubernetes OpenAPI schema (types and required fields)", () => {
    let checked = 0;
    for (const [stack, r] of rendered) {
      for (const [file, text] of r.files) {
        if (!file.startsWith("kubernetes/")) continue;
        const object = parseYaml(text) as Record<string, unknown>;
        // The Tigera operator's Installation has no OpenAPI model here: the API server checks it against the
        // operator's own CRD in test/cluster/calico-windows.test.ts.
        if (String(object.apiVersion).startsWith("operator.tigera.io/")) continue;
        assert.doesNotThrow(() => validateKubernetesObject(object), `${stack} ${file}`);
        checked++;
      }
    }
    assert.ok(checked >= 20, `only ${checked} objects`);
    // What the program only reads (the cluster's Installation, which must exist) is listed, not rendered as an object.
    const index = JSON.parse(get("dev").files.get("index.json") ?? "[]") as {
      type: string;
      file?: string;
      read?: boolean;
    }[];
    const reads = index.filter((e) => e.read === true);
    assert.deepEqual(
      reads.map((e) => [e.type, e.file]),
      [["kubernetes:operator.tigera.io/v1:Installation", undefined]],
    );
  });

  it("parses every rendered PowerShell script (bootstraps and SSH commands) with zero syntax errors", async () => {
    let parsed = 0;
    for (const [stack, r] of rendered) {
      for (const [file, text] of r.files) {
        const scripts: string[] = [];
        if (file.endsWith(".ps1")) scripts.push(text);
        if (file.startsWith("command/")) {
          const inputs = (JSON.parse(text) as { inputs: { create?: string; delete?: string } }).inputs;
          for (const command of [inputs.create ?? "", inputs.delete ?? ""]) {
            const inline = /-Command "(.*)"$/s.exec(command);
            if (inline?.[1]) scripts.push(inline[1].replace(/\\"/g, '"'));
            const encoded = /-EncodedCommand ([A-Za-z0-9+/=]+)$/.exec(command);
            if (encoded?.[1]) scripts.push(Buffer.from(encoded[1], "base64").toString("utf16le"));
          }
        }
        for (const script of scripts) {
          assert.deepEqual(await powerShellSyntaxErrors(script), [], `${stack} ${file}`);
          parsed++;
        }
      }
    }
    assert.ok(parsed >= 6, `only ${parsed} scripts`);
  });

  it("keeps every secret value out of plain settings and out of every file, base64 included", () => {
    // The scan itself finds a value however it is encoded.
    for (const planted of [
      `x${"s3cr3t-probe"}`,
      Buffer.from("s3cr3t-probe").toString("base64").padEnd(44, "A"),
      Buffer.from(`-EncodedCommand s3cr3t-probe ${"p".repeat(30)}`, "utf16le").toString("base64"),
    ]) {
      assert.ok(
        decodedForms(planted).some((f) => f.includes("s3cr3t-probe")),
        planted,
      );
    }
    for (const [stack, r] of rendered) {
      const values = Object.values(secrets.get(stack) ?? {});
      if (stack !== "local") assert.ok(values.length >= 2, stack);
      for (const raw of r.raw) {
        for (const s of plainStrings(raw.inputs)) {
          for (const form of decodedForms(s))
            for (const v of values)
              assert.ok(!form.includes(v), `${stack}: ${raw.type} ${raw.name} holds a secret in a plain setting`);
        }
      }
      for (const [file, text] of r.files) {
        for (const form of decodedForms(text))
          for (const v of values) assert.ok(!form.includes(v), `${stack}: ${file} holds a secret`);
      }
    }
  });

  it("passes the secrets where they belong: the extension's protected command (the join token), the pool's Key Vault secret (the rest) and the SSH stdin carry them", () => {
    // The scale set's model holds the admin password and the extension's protected settings, so Pulumi marks it secret
    // as a whole.
    const profile = (
      get("dev").raw.find((x) => x.type === "azure-native:compute:VirtualMachineScaleSet")?.inputs as {
        virtualMachineProfile: Record<string, unknown>;
      }
    ).virtualMachineProfile;
    assert.equal(profile[SIG], SECRET_SIG);
    const dev = (
      profile.value as { extensionProfile: { extensions: { protectedSettings: { commandToExecute: string } }[] } }
    ).extensionProfile.extensions[0];
    const command = dev?.protectedSettings.commandToExecute ?? "";
    // The scale set's own join token (derived from the stack's secret, which itself travels nowhere).
    assert.match(decodeExtensionCommand(command), /KUBE_BOOTSTRAP_TOKEN\\?":\\?"[a-z0-9]{6}\.[a-z0-9]{16}/);
    assert.ok(!decodeExtensionCommand(command).includes(secrets.get("dev")?.bootstrapTokenSecret ?? "none"));
    // kube-proxy's token (ClusterJoin's, a JWT of about 1 KB on a real cluster) is in the pool's Key Vault secret,
    // not in the command.
    const vault = get("dev").raw.find((x) => x.type === "azure-native:keyvault:Secret")?.inputs as {
      properties: { value: { value: string } };
    };
    const token = (JSON.parse(vault.properties.value.value) as Record<string, string>).KUBE_PROXY_TOKEN ?? "";
    assert.ok(token.length > 0, "kube-proxy's token is in the pool's Key Vault secret");
    assert.ok(!decodeExtensionCommand(command).includes(token), "and does not travel in the command");
    const byo = get("byoh").raw.find((x) => /^lab-winlab-02-bootstrap-[0-9a-f]{12}$/.test(x.name))?.inputs as {
      stdin: Record<string, unknown>;
    };
    // The host's own derived token on stdin, never the stack's secret it is derived from.
    assert.match(JSON.stringify(byo.stdin), /KUBE_BOOTSTRAP_TOKEN\\":\\"[a-z0-9]{6}\.[a-z0-9]{16}/);
    assert.ok(!JSON.stringify(byo.stdin).includes(secrets.get("byoh")?.bootstrapTokenSecret ?? "none"));
  });
});

describe("upgrader rollouts", () => {
  // A copy of the dev stack, edited, rendered from a directory of its own.
  async function variant(name: string, edit: (fleet: Record<string, unknown>) => void): Promise<Rendered> {
    const dir = join(scratch, name);
    cpSync(STACKS_DIR, dir, { recursive: true });
    const doc = parseYaml(readFileSync(join(dir, "Pulumi.dev.yaml"), "utf8")) as {
      config: Record<string, Record<string, unknown>>;
    };
    const fleet = doc.config["winfleet:fleet"] as Record<string, unknown>;
    (fleet.content as Record<string, unknown>).dir = join(REPO, "content");
    edit(fleet);
    writeFileSync(join(dir, "Pulumi.dev.yaml"), toYaml(doc));
    return renderStack("dev", { dir, secrets: secrets.get("dev") ?? {} });
  }
  const podTemplate = (r: Rendered): string => {
    const ds = r.resources.find((x) => x.type === "kubernetes:apps/v1:DaemonSet")?.inputs as {
      spec: { template: unknown };
    };
    return JSON.stringify(ds.spec.template);
  };
  const at = <T>(o: Record<string, unknown>, ...path: string[]): T =>
    path.reduce<unknown>((x, k) => (x as Record<string, unknown>)[k], o) as T;

  it("pins the release's public key in every node's agent config when the stack names one", async () => {
    const { publicKey } = generateKeyPairSync("ed25519");
    const pem = publicKey.export({ type: "spki", format: "pem" }).toString();
    const pinned = await variant("pinned", (f) => {
      at<Record<string, unknown>>(f, "agent").publicKey = pem;
    });
    const vmss = pinned.resources.find((x) => x.type === "azure-native:compute:VirtualMachineScaleSet")?.inputs as {
      virtualMachineProfile: { userData: string };
    };
    const bootstrap = Buffer.from(vmss.virtualMachineProfile.userData, "base64").toString("utf8");
    assert.ok(
      bootstrap.includes(JSON.stringify(pem).slice(1, -1)),
      "the agent config the bootstrap writes carries the key",
    );
  });

  it("changes the pod template for a new agent version or new content, and not for anything else", async () => {
    const base = await variant("same", () => undefined);
    assert.equal(podTemplate(base), podTemplate(get("dev")), "the same stack renders the same template");
    const agent = await variant("agent", (f) => {
      at<Record<string, unknown>>(f, "agent").version = "0.2.0";
    });
    assert.notEqual(podTemplate(agent), podTemplate(base), "a new agent version rolls");
    const contentDir = join(scratch, "content-copy");
    cpSync(join(REPO, "content"), contentDir, { recursive: true });
    const motd = join(contentDir, "components", "winfleet-broker", "1.0.0", "metadata.json");
    const meta = JSON.parse(readFileSync(motd, "utf8")) as { description?: string };
    writeFileSync(motd, JSON.stringify({ ...meta, description: `${meta.description ?? ""} (edited)` }, null, 2));
    const content = await variant("content", (f) => {
      at<Record<string, unknown>>(f, "content").dir = contentDir;
    });
    assert.notEqual(content.outputs.contentSha256, base.outputs.contentSha256);
    assert.notEqual(podTemplate(content), podTemplate(base), "new content rolls");
    const scaled = await variant("scaled", (f) => {
      at<Record<string, unknown>[]>(f, "pools")[0]!.count = 5;
      at<Record<string, unknown>>(f, "upgrader").maxUnavailable = 2;
    });
    assert.equal(podTemplate(scaled), podTemplate(base), "scaling the pool or the rollout pace rolls nothing");
  });
});
