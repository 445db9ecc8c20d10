/**
 * `winfleet render`: the program run under Pulumi's own mock runtime, and what
 * it would deploy written as one file per resource — Kubernetes objects as
 * YAML, Azure and command resources as JSON, bootstraps as `.ps1` — sorted,
 * byte-identical for the same input, every secret replaced by `[secret]`.
 * Nothing reaches a cloud; a bad stack config fails before anything is written.
 */
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { stringify as toYaml } from "yaml";
import { canonicalJson } from "../agent/common/canonical-json";
import { secretKeys } from "./config";
import type * as Program from "./program";
import type { FleetOutputs } from "./program";
import { type StackFile, readStackFile } from "./stack-file";

/** One registered resource, as the mock saw it. */
export interface Registered {
  readonly type: string;
  readonly name: string;
  readonly inputs: Record<string, unknown>;
}

/** A render: the resources and the files they become. */
export interface Rendered {
  readonly stack: StackFile;
  readonly resources: readonly Registered[];
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
  if (o[SECRET_SIG] === ASSET) return { asset: typeof o.path === "string" ? basename(o.path) : typeof o.text === "string" ? "text" : "asset" };
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, scrub(v)]));
}

function slug(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, "-");
}

/** The files a set of resources becomes. */
export function renderFiles(resources: readonly Registered[]): Map<string, string> {
  const files = new Map<string, string>();
  const index: { type: string; name: string; file?: string }[] = [];
  for (const r of resources) {
    const inputs = scrub(r.inputs) as Record<string, unknown>;
    let file: string | undefined;
    if (r.type.startsWith("kubernetes:")) {
      const meta = (inputs.metadata ?? {}) as { name?: string; namespace?: string };
      file = `kubernetes/${slug(typeof inputs.kind === "string" ? inputs.kind : r.type)}-${meta.namespace ? `${slug(meta.namespace)}-` : ""}${slug(meta.name ?? r.name)}.yaml`;
      files.set(file, toYaml(JSON.parse(canonicalJson(inputs)) as unknown, { lineWidth: 0 }));
    } else if (!r.type.startsWith("winfleet:")) {
      const [pkg = "", mod = "", kind = ""] = r.type.split(":");
      file = `${slug(pkg)}/${slug(mod)}-${slug(kind)}-${slug(r.name)}.json`;
      files.set(file, `${canonicalJson({ type: r.type, name: r.name, inputs })}\n`);
    }
    for (const script of bootstraps(r)) files.set(`bootstrap/${slug(r.name)}.ps1`, script);
    index.push({ type: r.type, name: r.name, ...(file ? { file } : {}) });
  }
  files.set("index.json", `${canonicalJson(index.sort((a, b) => (a.type === b.type ? (a.name < b.name ? -1 : 1) : a.type < b.type ? -1 : 1)))}\n`);
  return files;
}

// The bootstrap a resource carries: a VM's userData (base64), or what a BYO upload writes.
function bootstraps(r: Registered): string[] {
  const i = r.inputs;
  const profile = (i.virtualMachineProfile ?? {}) as Record<string, unknown>;
  const userData = typeof i.userData === "string" ? i.userData : typeof profile.userData === "string" ? profile.userData : undefined;
  if (userData) return [Buffer.from(userData, "base64").toString("utf8")];
  if (r.type === "command:remote:Command" && r.name.endsWith("-upload-bootstrap") && typeof i.stdin === "string") return [i.stdin];
  return [];
}

/** Runs the program for `stack` under mocks. `secrets` sets values for its secure keys (default: a placeholder each). */
export async function renderStack(stackName: string, options: { dir?: string; secrets?: Readonly<Record<string, string>>; program?: () => Promise<FleetOutputs> } = {}): Promise<Rendered> {
  const stack = await readStackFile(stackName, options.dir ? { dir: options.dir } : {});
  const resources: Registered[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => {
        resources.push({ type: args.type, name: args.name, inputs: args.inputs as Record<string, unknown> });
        // Outputs a provider would compute, so the program's references resolve.
        const inputs = args.inputs as Record<string, unknown>;
        return { id: `${args.name}-id`, state: { ...inputs, name: inputs.name ?? args.name, identity: { principalId: `${args.name}-principal` } } };
      },
      call: (args) => (args.token.includes("listStorageAccountServiceSAS") ? { serviceSasToken: "sv=mock&sig=mock" } : {}),
    },
    "winfleet",
    stack.stack,
    false,
  );
  const keys = secretKeys(stack.fleet);
  const config: Record<string, string> = { "winfleet:fleet": JSON.stringify(rawFleet(stack)) };
  for (const k of keys) config[`winfleet:${k}`] = options.secrets?.[k] ?? `placeholder-${k}`;
  pulumi.runtime.setAllConfig(config, keys.map((k) => `winfleet:${k}`));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const program = options.program ?? (require("./program") as typeof Program).fleetProgram;
  const outputs = await program();
  await settled();
  resources.sort((a, b) => (a.type === b.type ? (a.name < b.name ? -1 : 1) : a.type < b.type ? -1 : 1));
  return { stack, resources, outputs, files: renderFiles(resources) };
}

// Waits for every resource registration to reach the mock monitor.
async function settled(): Promise<void> {
  // waitForRPCs is the runtime's own "every registration has been sent" (marked internal in its types).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const settings = require("@pulumi/pulumi/runtime/settings") as { waitForRPCs?: () => Promise<void> };
  if (typeof settings.waitForRPCs === "function") await settings.waitForRPCs();
}

// The stack's `winfleet:fleet` value as written (the program parses it itself).
function rawFleet(stack: StackFile): unknown {
  return stack.rawFleet;
}

/** Writes a render to `out`, replacing it in one rename. */
export async function writeRender(rendered: Rendered, out: string): Promise<void> {
  await mkdir(dirname(out), { recursive: true });
  const staging = await mkdtemp(join(dirname(out), `.${basename(out)}.rendering-`));
  try {
    for (const [rel, text] of rendered.files) {
      await mkdir(dirname(join(staging, rel)), { recursive: true });
      await writeFile(join(staging, rel), text);
    }
    await rm(out, { recursive: true, force: true });
    await rename(staging, out);
  } catch (e) {
    await rm(staging, { recursive: true, force: true });
    throw e;
  }
}
