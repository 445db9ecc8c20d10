/**
 * `winfleet render`: the program run under Pulumi's own mock runtime, and what
 * it would deploy written as one file per resource — Kubernetes objects as
 * YAML, Azure and command resources as JSON, bootstraps as `.ps1` — sorted,
 * byte-identical for the same input, every secret replaced by `[secret]`.
 * Nothing reaches a cloud; a bad stack config fails before anything is written.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { stringify as toYaml } from "yaml";
import { canonicalJson, type OutputShape, replaceDirectory } from "../agent/common";
import { secretKeys } from "./config";
import { withLeanRuntime } from "./lean-runtime";
import type * as Program from "./program";
import type { FleetOutputs } from "./program";
import { type StackFile, readStackFile } from "./stack-file";

/** One registered resource, as the mock saw it. */
export interface Registered {
  readonly type: string;
  readonly name: string;
  readonly inputs: Record<string, unknown>;
  /** The provider it is registered with (`<URN>::<id>`), when an explicit one. */
  readonly provider?: string;
  /** An existing resource the program reads (`X.get`), not one it deploys: listed in index.json, no file of its own. */
  readonly read?: true;
  /** What a read reads: its id (`namespace/name`, or `name`). */
  readonly id?: string;
}

/** A render: the resources and the files they become. */
export interface Rendered {
  readonly stack: StackFile;
  /** What was registered, secrets replaced by `[secret]`: what the files show. */
  readonly resources: readonly Registered[];
  /** The first run's inputs as registered, secrets included (for tests; never written). */
  readonly raw: readonly Registered[];
  readonly outputs: FleetOutputs;
  /** Relative path → file text. */
  readonly files: ReadonlyMap<string, string>;
}

const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const SECRET = "1b47061264138c4ac30d75fd1eb44270";
const ASSET = "c44067f5952c0a294b673a41bacd8c17";
/** What every secret value becomes. */
export const MASK = "[secret]";

/** Replaces secrets by `[secret]` and assets by their file name, keeping everything else. */
export function scrub(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrub);
  if (value === null || typeof value !== "object") return value;
  const o = value as Record<string, unknown>;
  if (o[SECRET_SIG] === SECRET) return MASK;
  if (o[SECRET_SIG] === ASSET || o.__pulumiAsset === true)
    return { asset: typeof o.path === "string" ? basename(o.path) : typeof o.text === "string" ? "text" : "asset" };
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, scrub(v)]));
}

function slug(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, "-");
}

/** The files a set of resources becomes. */
export function renderFiles(resources: readonly Registered[]): Map<string, string> {
  const files = new Map<string, string>();
  const index: { type: string; name: string; file?: string; read?: boolean }[] = [];
  for (const r of resources) {
    const inputs = scrub(r.inputs) as Record<string, unknown>;
    let file: string | undefined;
    if (r.read) {
      // Nothing to show: the program only requires that it exists.
    } else if (r.type.startsWith("kubernetes:")) {
      const meta = (inputs.metadata ?? {}) as { name?: string; namespace?: string };
      file = `kubernetes/${slug(typeof inputs.kind === "string" ? inputs.kind : r.type)}-${meta.namespace ? `${slug(meta.namespace)}-` : ""}${slug(meta.name ?? r.name)}.yaml`;
      files.set(file, toYaml(JSON.parse(canonicalJson(inputs)) as unknown, { lineWidth: 0 }));
    } else if (!r.type.startsWith("winfleet:")) {
      const [pkg = "", mod = "", kind = ""] = r.type.split(":");
      file = `${slug(pkg)}/${slug(mod)}-${slug(kind)}-${slug(r.name)}.json`;
      files.set(file, `${canonicalJson({ type: r.type, name: r.name, inputs })}\n`);
    }
    for (const script of bootstraps(r))
      files.set(`bootstrap/${slug(r.name)}.${script.startsWith("#!/bin/sh") ? "sh" : "ps1"}`, script);
    index.push({ type: r.type, name: r.name, ...(file ? { file } : {}), ...(r.read ? { read: true } : {}) });
  }
  files.set(
    "index.json",
    `${canonicalJson(index.sort((a, b) => (a.type === b.type ? (a.name < b.name ? -1 : 1) : a.type < b.type ? -1 : 1)))}\n`,
  );
  return files;
}

// The bootstrap a resource carries: a VM's userData (base64), or the text a BYO host's bootstrap copy writes.
function bootstraps(r: Registered): string[] {
  const i = r.inputs;
  const profile = (i.virtualMachineProfile ?? {}) as Record<string, unknown>;
  const userData =
    typeof i.userData === "string" ? i.userData : typeof profile.userData === "string" ? profile.userData : undefined;
  if (userData) return [Buffer.from(userData, "base64").toString("utf8")];
  const source = i.source as { text?: unknown } | undefined;
  if (r.type === "command:remote:CopyToRemote" && typeof source?.text === "string") return [source.text];
  return [];
}

/** Options of {@link renderStack}. */
export interface RenderOptions {
  /** Where `Pulumi.<stack>.yaml` files are (default: the repository's `stacks/`). */
  readonly dir?: string;
  /** Values for the stack's secure keys (default: a placeholder each); they never reach the files. */
  readonly secrets?: Readonly<Record<string, string>>;
  /** The program to run (default: `infra/program.ts`). */
  readonly program?: () => Promise<FleetOutputs>;
  /**
   * Run Pulumi's runtime as it runs for a deployment, its traces and promise wrapping on (default: off, see
   * lean-runtime.ts); for checking that a render does not depend on them.
   */
  readonly asDeployed?: boolean;
}

/**
 * Runs the program for a stack under mocks and renders what it registers.
 * It runs twice, with different values for every secure key (and the SAS a
 * provider call returns): whatever differs between the runs depends on a
 * secret. Inside values Pulumi marks secret, those leaves become `[secret]`
 * and the rest stays readable (Pulumi marks a whole property secret when any
 * part of it is); outside them, a difference is a secret leaking into plain
 * settings, and the render fails saying where.
 */
export async function renderStack(stackName: string, options: RenderOptions = {}): Promise<Rendered> {
  const stack = await readStackFile(stackName, options.dir ? { dir: options.dir } : {});
  const keys = secretKeys(stack.fleet);
  const first = Object.fromEntries(keys.map((k) => [k, options.secrets?.[k] ?? `placeholder-${k}`]));
  const second = Object.fromEntries(keys.map((k) => [k, `${first[k] ?? ""}-other`]));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const program = options.program ?? (require("./program") as typeof Program).fleetProgram;
  const runs = async (): Promise<Record<"a" | "b", Awaited<ReturnType<typeof runProgram>>>> => ({
    a: await runProgram(stack, first, "sv=render&sig=first", program),
    b: await runProgram(stack, second, "sv=render&sig=second", program),
  });
  const { a, b } = options.asDeployed ? await runs() : await withLeanRuntime(runs);
  const resources = a.resources.map((r, i) => {
    const other = b.resources[i];
    if (!other || other.type !== r.type || other.name !== r.name)
      throw new Error(
        `the program registers different resources for different secret values (${r.type} ${r.name}); a secret must not decide what is deployed`,
      );
    return {
      type: r.type,
      name: r.name,
      inputs: maskSecrets(r.inputs, other.inputs, false, `${r.type} ${r.name}`) as Record<string, unknown>,
      ...(r.provider ? { provider: r.provider } : {}),
      ...(r.read ? { read: r.read } : {}),
    };
  });
  return { stack, resources, raw: a.resources, outputs: a.outputs, files: renderFiles(resources) };
}

// One run of the program under Pulumi's mock runtime, with these secret values.
async function runProgram(
  stack: StackFile,
  secrets: Readonly<Record<string, string>>,
  sas: string,
  program: () => Promise<FleetOutputs>,
): Promise<{ resources: Registered[]; outputs: FleetOutputs }> {
  const resources: Registered[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        resources.push({
          type: args.type,
          name: args.name,
          inputs: machineFree(args.type, args.inputs as Record<string, unknown>),
          ...(args.provider ? { provider: args.provider } : {}),
          // A read (`X.get`) comes with the id of what it reads; a registration with its import id, which the
          // program never sets.
          ...(args.id ? { read: true as const, id: args.id } : {}),
        });
        // Outputs a provider would compute, so the program's references resolve.
        const inputs = args.inputs as Record<string, unknown>;
        // A service-account token Secret comes back filled by the cluster's token controller,
        // a Key Vault secret with the URL of the version written.
        const filled =
          args.type === "kubernetes:core/v1:Secret" && inputs.type === "kubernetes.io/service-account-token"
            ? { data: { token: Buffer.from(`token-of-${args.name}`).toString("base64") } }
            : args.type === "azure-native:keyvault:Secret"
              ? {
                  properties: {
                    secretUriWithVersion: `https://${String(inputs.vaultName).toLowerCase()}.vault.azure.net/secrets/${String(inputs.secretName)}/${"0123456789abcdef".repeat(2)}`,
                  },
                }
              : {};
        return {
          id: `${args.name}-id`,
          state: {
            ...inputs,
            ...filled,
            name: providerName(args.type, inputs) ?? args.name,
            principalId: `${args.name}-principal`,
            clientId: `${args.name}-client`,
            identity: { principalId: `${args.name}-principal` },
          },
        };
      },
      call: (args) => (args.token.includes("listStorageAccountServiceSAS") ? { serviceSasToken: sas } : {}),
    },
    "winfleet",
    stack.stack,
    false,
  );
  const config: Record<string, string> = { "winfleet:fleet": JSON.stringify(stack.rawFleet) };
  for (const [k, v] of Object.entries(secrets)) config[`winfleet:${k}`] = v;
  pulumi.runtime.setAllConfig(
    config,
    Object.keys(secrets).map((k) => `winfleet:${k}`),
  );
  const outputs = await program();
  await settled();
  for (const r of resources) await resolveAssets(r.inputs);
  resources.sort((x, y) => (x.type === y.type ? (x.name < y.name ? -1 : 1) : x.type < y.type ? -1 : 1));
  return { resources, outputs };
}

/**
 * A resource's inputs without what the machine running the render put there: the Kubernetes
 * provider takes its `kubeconfig` from this machine's KUBECONFIG when the program sets none, a
 * local path that is no part of what is deployed (and would make renders differ between machines).
 */
function machineFree(type: string, inputs: Record<string, unknown>): Record<string, unknown> {
  if (type !== "pulumi:providers:kubernetes" || !("kubeconfig" in inputs)) return inputs;
  const { kubeconfig, ...rest } = inputs;
  void kubeconfig;
  return rest;
}

/**
 * The input a provider takes a resource's real name from, by type: its `name`
 * output is that value, not the logical name, and a reference to it (a VM
 * extension's `vmName`, a blob's `containerName`) must render as deployed.
 */
export const NAME_INPUTS: Readonly<Record<string, string>> = {
  "azure-native:compute:VirtualMachineScaleSet": "vmScaleSetName",
  "azure-native:compute:VirtualMachine": "vmName",
  "azure-native:compute:VirtualMachineExtension": "vmExtensionName",
  "azure-native:compute:VirtualMachineScaleSetExtension": "vmssExtensionName",
  "azure-native:storage:BlobContainer": "containerName",
  "azure-native:storage:Blob": "blobName",
  "azure-native:network:NetworkInterface": "networkInterfaceName",
  "azure-native:network:PublicIPAddress": "publicIpAddressName",
  "azure-native:managedidentity:UserAssignedIdentity": "resourceName",
  "azure-native:authorization:RoleAssignment": "roleAssignmentName",
  "azure-native:keyvault:Secret": "secretName",
};

/**
 * The name a provider gives a resource from its inputs, when they set it; otherwise the provider picks one (the mock:
 * the logical name).
 */
export function providerName(type: string, inputs: Record<string, unknown>): string | undefined {
  const key = NAME_INPUTS[type];
  const named =
    key !== undefined
      ? inputs[key]
      : type.startsWith("kubernetes:")
        ? (inputs.metadata as { name?: unknown } | undefined)?.name
        : inputs.name;
  return typeof named === "string" ? named : undefined;
}

const isSecret = (v: unknown): v is { value: unknown } =>
  v !== null && typeof v === "object" && (v as Record<string, unknown>)[SECRET_SIG] === SECRET;

/**
 * `a` with every leaf that differs from `b` inside a secret replaced by `[secret]`; a difference outside one throws.
 */
export function maskSecrets(a: unknown, b: unknown, inSecret: boolean, where: string): unknown {
  if (isSecret(a)) return maskSecrets(a.value, isSecret(b) ? b.value : b, true, where);
  const differs = (): unknown => {
    if (inSecret) return MASK;
    throw new Error(
      `${where} depends on a secret but is not marked secret: it would be stored and shown in plain text`,
    );
  };
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return differs();
    return a.map((x, i) => maskSecrets(x, b[i], inSecret, `${where}[${i}]`));
  }
  if (a !== null && typeof a === "object") {
    if (b === null || typeof b !== "object" || Array.isArray(b) || isSecret(b)) return differs();
    const bo = b as Record<string, unknown>;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(bo).length || keys.some((k) => !(k in bo))) return differs();
    return Object.fromEntries(
      keys.map((k) => [k, maskSecrets((a as Record<string, unknown>)[k], bo[k], inSecret, `${where}.${k}`)]),
    );
  }
  return Object.is(a, b) ? a : differs();
}

// Under mocks an asset reaches the monitor as the SDK's object, its text or path a promise: resolved in place, so
// what a copy carries (a BYO host's bootstrap) renders as text.
async function resolveAssets(value: unknown): Promise<void> {
  if (value === null || typeof value !== "object") return;
  const o = value as Record<string, unknown>;
  for (const [k, v] of Object.entries(o)) {
    if (o.__pulumiAsset === true && v instanceof Promise) o[k] = (await v) as unknown;
    else await resolveAssets(v);
  }
}

// Waits for every resource registration to reach the mock monitor.
async function settled(): Promise<void> {
  // waitForRPCs is the runtime's own "every registration has been sent" (marked internal in its types).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const settings = require("@pulumi/pulumi/runtime/settings") as { waitForRPCs?: () => Promise<void> };
  if (typeof settings.waitForRPCs === "function") await settings.waitForRPCs();
}

/** What a render holds at its top: its index and a folder per provider (and `bootstrap/`). */
export const RENDER_SHAPE: OutputShape = {
  what: "a render",
  marker: "index.json",
  owns: (e) => e.isDirectory() || (e.isFile() && e.name === "index.json"),
};

/** Files written at once by {@link writeRender}: libuv's thread pool has four threads. */
const WRITERS = 8;

/** Writes a render to `out`, replacing an earlier render (never anything else: see output-dir.ts). */
export async function writeRender(rendered: Rendered, out: string): Promise<void> {
  await mkdir(dirname(out), { recursive: true });
  const staging = await mkdtemp(join(dirname(out), `.${basename(out)}.rendering-`));
  try {
    for (const dir of new Set([...rendered.files.keys()].map((rel) => dirname(join(staging, rel)))))
      await mkdir(dir, { recursive: true });
    // A few writes in flight rather than one: a fleet renders thousands of small files, each a round trip to
    // libuv's thread pool. Every writer finishes before a failure is reported, so the staging folder is removed
    // with nothing still writing into it.
    const files = [...rendered.files];
    const writer = async (): Promise<void> => {
      try {
        for (let next = files.pop(); next; next = files.pop()) await writeFile(join(staging, next[0]), next[1]);
      } catch (e) {
        files.length = 0; // the others stop at their next file
        throw e;
      }
    };
    const done = await Promise.allSettled(Array.from({ length: WRITERS }, writer));
    const failed = done.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    await replaceDirectory(staging, out, RENDER_SHAPE);
  } catch (e) {
    await rm(staging, { recursive: true, force: true });
    throw e;
  }
}
