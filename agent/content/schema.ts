/**
 * The content contracts — templates and component metadata — as zod schemas,
 * the one source of truth for their shape; the TypeScript types are derived.
 * Field names keep the 2019 format (`install_message`, `pre_upgrade`, `lprecmds`…)
 * so existing content loads unchanged.
 */
import { z } from "zod";

/** A component name: no `_`, because `_` separates name and version in package references. */
export const componentName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9.-]*$/, "letters, digits, '.' and '-' only (no '_')");
/** A version: anything without whitespace, `_` allowed only because versions like `16e1a3cf` exist. */
export const componentVersion = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]*$/, "letters, digits, '.', '_', '+' and '-' only");

/** `"yes"`/`"no"` as the 2019 format writes it; booleans are accepted too. */
const yesNo = z.union([z.enum(["yes", "no"]), z.boolean()]).transform((v) => v === true || v === "yes");
const commands = z.array(z.string()).default([]);

/** A lifecycle section: cluster-side hooks around host commands, ordered by priority. */
export const sectionSchema = z.strictObject({
  /** Lower runs first; ties keep template order. */
  priority: z.number().int().min(0).max(10_000).default(100),
  /** Cluster-side commands run before `commands`, with the node's kubeconfig in KUBECONFIG. */
  lprecmds: commands,
  /** Run on the host in the component's shell; each must be idempotent (a step interrupted by a crash is re-run). */
  commands,
  /** Cluster-side commands run after `commands`. */
  lpstcmds: commands,
  /** Whether the host must restart before the next step that depends on this one. */
  reboot: yesNo.default(false),
});

/** `pre_upgrade` also says whether the old version is uninstalled before the new one is laid down. */
export const preUpgradeSchema = sectionSchema.extend({ uninstall: yesNo.default(false) });

const emptySection = { priority: 100, lprecmds: [], commands: [], lpstcmds: [], reboot: false };

/** An environment variable name, as commands receive it. */
export const variableName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name");

/**
 * winfleet: a variable a component reads. The apply refuses to start when a
 * required variable has no value (from the template, the agent config's
 * variables or its secrets); a secret's value is masked in every output the
 * agent keeps or prints.
 */
export const variableSpecSchema = z.strictObject({
  description: z.string().default(""),
  /** @default true */
  required: z.boolean().default(true),
  /** @default false */
  secret: z.boolean().default(false),
  /** Used when nothing else sets the variable (a required variable with a default is always satisfied). */
  default: z.string().optional(),
});

/** The shells a component's commands can run in. */
export const SHELLS = ["powershell", "sh"] as const;
/** A component's shell. */
export type ShellKind = (typeof SHELLS)[number];

/**
 * What a lifecycle can interrupt for the pods on the node: the container runtime, the kubelet, pod
 * networking (kube-proxy, the CNI), or the whole host (a restart).
 */
export const DISRUPTIONS = ["runtime", "kubelet", "network", "reboot"] as const;
/** One kind of disruption. */
export type Disruption = (typeof DISRUPTIONS)[number];

/** What each disruption restarts, as plans and the content reference name it. */
export const DISRUPTION_TEXT: Readonly<Record<Disruption, string>> = {
  runtime: "the container runtime",
  kubelet: "the kubelet",
  network: "pod networking",
  reboot: "the host",
};

/** `restarts the kubelet and pod networking`: what a list of disruptions restarts, in words. */
export function restartsText(what: readonly Disruption[]): string {
  const names = what.map((d) => DISRUPTION_TEXT[d]);
  const last = names.pop();
  return `restarts ${names.length > 0 ? `${names.join(", ")} and ` : ""}${last ?? "nothing"}`;
}

const disruptions = z.array(z.enum(DISRUPTIONS)).default([]);

/**
 * winfleet: what installing, upgrading (to this version) and uninstalling the component disrupt. A node
 * is drained before the first step of a lifecycle that disrupts anything; a reboot always does.
 */
export const disruptsSchema = z.strictObject({
  install: disruptions,
  upgrade: disruptions,
  uninstall: disruptions,
});

/** A component's metadata file (`/bin/metadata/<name>_<version>.metadata`). */
export const metadataSchema = z.strictObject({
  name: componentName,
  version: componentVersion,
  description: z.string().default(""),
  install_message: z.string().default(""),
  package_url: z.string().default(""),
  install: sectionSchema,
  uninstall: sectionSchema.default(emptySection),
  pre_upgrade: preUpgradeSchema.default({ ...emptySection, uninstall: false }),
  post_upgrade: sectionSchema.default(emptySection),
  /** Host paths the component owns beyond its Ignition files (removed on uninstall). */
  files: z.array(z.string()).default([]),
  /** winfleet: the shell that runs `commands`, `lprecmds` and `lpstcmds`. @default "powershell" */
  shell: z.enum(SHELLS).default("powershell"),
  /** winfleet: run each of this component's commands in a shell process of its own, not the apply's session. */
  isolated: z.boolean().default(false),
  /** winfleet: per-command time limit. */
  timeout_seconds: z.number().int().positive().max(86_400).default(900),
  /** winfleet: the variables the commands read, checked before anything runs. */
  variables: z.record(variableName, variableSpecSchema).default({}),
  /**
   * winfleet: what the cluster must provide for this component to work (documented per template).
   * Optional, not defaulted, so components without it compile exactly as before.
   */
  cluster_prerequisites: z.array(z.string().min(1)).optional(),
  /**
   * winfleet: what the component's lifecycles disrupt for the node's pods (the node is drained first).
   * Optional, not defaulted, so components without it compile exactly as before; absent, nothing but a reboot.
   */
  disrupts: disruptsSchema.optional(),
  /**
   * winfleet: the services this component keeps running (each started automatically at boot). `serve`'s re-verify
   * finds one stopped or disabled and brings it back. Optional, not defaulted, so components without it compile
   * exactly as before.
   */
  services: z.array(z.string().regex(/^[A-Za-z0-9_.-]+$/, "a service name")).optional(),
});

/** Parsed component metadata. */
export type ComponentMetadata = z.infer<typeof metadataSchema>;
/** A parsed lifecycle section. */
export type Section = z.infer<typeof sectionSchema>;

/** A package reference in a template: `<component>_<version>`. */
export const packageRef = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9.-]*_[A-Za-z0-9][A-Za-z0-9._+-]*$/, "expected <component>_<version>");

/** A template: the components one kind of node runs, for the Windows builds it fits. */
export const templateSchema = z.strictObject({
  name: componentName,
  version: z.string().min(1),
  description: z.string().default(""),
  install_message: z.string().default(""),
  packages: z.array(packageRef).min(1),
  /** Windows build numbers this template fits (17763 = Server 2019, 20348 = 2022, 26100 = 2025). */
  os: z.array(z.number().int().positive()).optional(),
  /**
   * Not yet supported upstream on its builds (a component's own project does not list them):
   * used only when named, never picked by the host's build. Optional, not defaulted, so other
   * templates compile exactly as before.
   */
  experimental: z.boolean().optional(),
  /** Values handed to every command as environment variables (never interpolated into code). */
  variables: z.record(variableName, z.string()).default({}),
});

/** A parsed template. */
export type Template = z.infer<typeof templateSchema>;

/** Splits `name_version` at the first `_`. */
export function splitPackageRef(ref: string): { name: string; version: string } {
  const i = ref.indexOf("_");
  return { name: ref.slice(0, i), version: ref.slice(i + 1) };
}

/** Where a component's metadata lives inside its Ignition file. */
export function metadataPath(name: string, version: string): string {
  return `/bin/metadata/${name}_${version}.metadata`;
}
