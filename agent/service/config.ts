/**
 * The agent config file `serve` reads (JSON or YAML): the one definition of
 * what a node's agent is told — which content and template to converge to,
 * where, with which values, and what else runs in the same process. The
 * bootstrap, the local fleet and `up` write it; nothing else is read at start.
 */
import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { drainSettingsSchema, ed25519PublicKey, ValidationError, secretField, zodIssues } from "../common";
import { componentName, variableName } from "../content";

const values = z.record(variableName, z.string()).default({});

/**
 * How the agent reports to Kubernetes (Events on its Node, annotations, the
 * `WinfleetReady` condition). Every request counts against one token bucket;
 * reports wait on disk in `<root>/.winfleet/report-queue` while the API server
 * cannot be reached.
 */
export const reportConfigSchema = z.strictObject({
  /** Report at all. @default true (when a kubeconfig is known) */
  enabled: z.boolean().default(true),
  /**
   * The node's own kubeconfig (identity `system:node:<nodeName>`); relative to the config file. @default the config's
   * `kubeconfig`
   */
  kubeconfig: z.string().min(1).optional(),
  /** Namespace the Node's Events are created in (the kubelet uses `default`). @default "default" */
  namespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "a DNS label")
    .max(63)
    .default("default"),
  /** Most reports kept on disk; past it the oldest are folded into one summary Event. @default 1000 */
  queueLimit: z.number().int().min(10).max(100_000).default(1000),
  /** Sustained API requests per second. @default 1 */
  eventsPerSecond: z.number().positive().max(100).default(1),
  /** Requests that may go out at once before the rate applies. @default 25 */
  eventBurst: z.number().int().min(1).max(1000).default(25),
  /** One request's time limit. @default 10 */
  requestTimeoutSeconds: z.number().positive().max(300).default(10),
  /** Longest wait between retries while the API server is unreachable. @default 60 */
  maxBackoffSeconds: z.number().positive().max(3600).default(60),
  /** How long `stop()` keeps sending what is queued. @default 5 */
  stopTimeoutSeconds: z.number().min(0).max(300).default(5),
});

/** A parsed `report` section, defaults filled in. */
export type ReportConfig = z.infer<typeof reportConfigSchema>;

/** The agent config's shape. */
export const agentConfigSchema = z.strictObject({
  /** The node's name, as Kubernetes knows it. @default the host name */
  nodeName: z.string().min(1).optional(),
  /**
   * Host path of `/`: where content lands and state lives (`<root>/.winfleet`). @default the system drive's root on
   * Windows, `/` elsewhere
   */
  root: z.string().min(1).optional(),
  /** The content to apply: a built bundle or a content source tree; relative to the config file. */
  content: z.string().min(1),
  /** Template name; without one the agent picks the template whose `os` lists this host's build. */
  template: componentName.optional(),
  /** Template version. @default the newest version of `template` */
  templateVersion: z.string().min(1).optional(),
  /** Values for commands, on top of (and overriding) the template's variables. */
  variables: values,
  /** Like `variables`, but never printed, logged or journaled (join tokens, credentials). */
  secrets: z.record(variableName, secretField(z.string(), "join tokens and credentials for commands")).default({}),
  /** The node's kubeconfig, handed to `lprecmds`/`lpstcmds` as KUBECONFIG; relative to the config file. */
  kubeconfig: z.string().min(1).optional(),
  /** How often `serve` re-verifies the applied files, in seconds (0.1 or more); 0 turns it off. @default 300 */
  verifyIntervalSeconds: z
    .number()
    .min(0)
    .max(86_400)
    // Below a tenth of a second the loop would only re-read files it has just read.
    .refine((v) => v === 0 || v >= 0.1, "must be 0 (off) or at least 0.1 seconds")
    .default(300),
  /** Re-apply the affected components when verification finds drift. @default false */
  autoCorrect: z.boolean().default(false),
  /**
   * Start again (and set to start automatically) a node service an installed component keeps running (its metadata's
   * `services`) that re-verification finds stopped or disabled, reporting it as an Event. @default true
   */
  restoreServices: z.boolean().default(true),
  /**
   * The wins-compatible broker `serve` runs in the same process: a wins config file (relative to this file) or the
   * config inline; absent means none.
   */
  broker: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
  /**
   * ed25519 public key (PEM) that content and agent bundles must be signed with; absent means unsigned bundles are
   * accepted.
   */
  publicKey: ed25519PublicKey.optional(),
  /**
   * Accept signed bundles older than the release accepted before under the same key (each acceptance logged and
   * reported as an Event). @default false
   */
  allowDowngrade: z.boolean().default(false),
  /**
   * How a reboot happens: `exit` records it and exits 3010 for the supervisor to restart the agent; `windows` runs
   * shutdown.exe. @default windows on Windows, exit elsewhere
   */
  reboot: z.enum(["exit", "windows"]).optional(),
  /** Reporting to Kubernetes; absent means the defaults of {@link reportConfigSchema}. */
  report: reportConfigSchema.optional(),
  /**
   * How the node is drained before a disruptive step, with the node's kubeconfig (the `report` section's, else
   * `kubeconfig`); absent means `kubectl drain`'s defaults (docs/upgrades.md).
   */
  drain: drainSettingsSchema.optional(),
});

/** A parsed agent config, with relative paths resolved against the config file's directory. */
export type AgentConfig = z.infer<typeof agentConfigSchema> & { readonly file: string };

/** Parses agent config text; `file` names it in errors and anchors relative paths. */
export function parseAgentConfig(text: string, file: string): AgentConfig {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ValidationError(file, [
      { path: "", message: `not valid YAML or JSON: ${(e as Error).message}`, severity: "error" },
    ]);
  }
  const parsed = agentConfigSchema.safeParse(doc ?? {});
  if (!parsed.success) throw new ValidationError(file, zodIssues(parsed.error));
  const base = dirname(resolve(file));
  const abs = (p: string): string => (isAbsolute(p) || /^[A-Za-z]:[\\/]/.test(p) ? p : resolve(base, p));
  const c = parsed.data;
  return {
    ...c,
    file: resolve(file),
    content: abs(c.content),
    ...(c.root !== undefined ? { root: abs(c.root) } : {}),
    ...(c.kubeconfig !== undefined ? { kubeconfig: abs(c.kubeconfig) } : {}),
    ...(typeof c.broker === "string" ? { broker: abs(c.broker) } : {}),
    ...(c.report?.kubeconfig !== undefined ? { report: { ...c.report, kubeconfig: abs(c.report.kubeconfig) } } : {}),
  };
}

/** Reads and parses an agent config file. */
export async function loadAgentConfig(file: string): Promise<AgentConfig> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    throw new ValidationError(file, [{ path: "", message: `cannot read: ${(e as Error).message}`, severity: "error" }]);
  }
  return parseAgentConfig(text, file);
}
