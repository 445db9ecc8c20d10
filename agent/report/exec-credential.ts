/**
 * Exec credential plugins (`users[].user.exec` in a kubeconfig), run the way
 * client-go runs them: the command with its args, the kubeconfig's `env` over
 * the agent's own, and `KUBERNETES_EXEC_INFO` holding an ExecCredential whose
 * `spec.interactive` is false (a service has no terminal) and, when
 * `provideClusterInfo` is set, the cluster. The plugin prints an
 * ExecCredential whose `status` holds a bearer token or a client certificate
 * and key, kept until its `expirationTimestamp` (for the life of the process
 * when it has none) or until the API server answers 401.
 */
import { spawn } from "node:child_process";
import { z } from "zod";
import { errorMessage, zodIssues } from "../common";

const API_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"] as const;

/** `users[].user.exec`. */
export const execConfigSchema = z
  .looseObject({
    command: z.string().min(1),
    args: z.array(z.string()).nullish(),
    env: z.array(z.object({ name: z.string().min(1), value: z.string() })).nullish(),
    apiVersion: z.enum(API_VERSIONS, {
      error: `must be one of ${API_VERSIONS.join(", ")} (v1alpha1 was removed in Kubernetes 1.24)`,
    }),
    installHint: z.string().nullish(),
    provideClusterInfo: z.boolean().nullish(),
    interactiveMode: z.enum(["Never", "IfAvailable", "Always"]).nullish(),
  })
  .superRefine((e, ctx) => {
    if (e.apiVersion === "client.authentication.k8s.io/v1" && !e.interactiveMode)
      ctx.addIssue({
        code: "custom",
        path: ["interactiveMode"],
        message: "required by client.authentication.k8s.io/v1 (Never or IfAvailable here)",
      });
    if (e.interactiveMode === "Always")
      ctx.addIssue({
        code: "custom",
        path: ["interactiveMode"],
        message: "Always needs a terminal, and the agent runs as a service: use Never or IfAvailable",
      });
  });

/** An exec plugin's settings, as the kubeconfig gives them. */
export type ExecConfig = z.infer<typeof execConfigSchema>;

/** What a plugin handed back. */
export interface ExecCredential {
  readonly token?: string;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  /** When it stops being valid (ms since the epoch); undefined: not until a 401. */
  readonly expiresAt?: number;
}

/** The cluster, for `provideClusterInfo` (`spec.cluster` of KUBERNETES_EXEC_INFO). */
export interface ExecClusterInfo {
  readonly server: string;
  readonly "tls-server-name"?: string;
  readonly "insecure-skip-tls-verify"?: boolean;
  readonly "certificate-authority-data"?: string;
  readonly "proxy-url"?: string;
  readonly config?: unknown;
}

/** How a plugin process ran. */
export interface ExecResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Starts `command` and collects its output; rejects when it cannot start (with the spawn error's code) or outlives
 * `timeoutMs`.
 */
export type ExecRunner = (
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
) => Promise<ExecResult>;

/** Output past this is not a credential; the plugin is stopped. */
const MAX_OUTPUT = 1024 * 1024;

/** The real runner: no shell, no stdin, output bounded, killed at the deadline. */
export const spawnExec: ExecRunner = (command, args, env, timeoutMs) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, [...args], { env, stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let failure: Error | undefined;
    const stop = (why: Error): void => {
      failure ??= why;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => stop(new Error(`gave no answer within ${timeoutMs} ms`)), timeoutMs);
    const collect = (into: Buffer[]) => (c: Buffer) => {
      size += c.length;
      if (size > MAX_OUTPUT) stop(new Error(`wrote over ${MAX_OUTPUT} bytes`));
      else into.push(c);
    };
    child.stdout.on("data", collect(out));
    child.stderr.on("data", collect(err));
    child.on("error", (e) => {
      failure ??= e;
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (failure) reject(failure);
      else resolve({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") });
    });
  });

const credentialSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal("ExecCredential"),
  status: z.object(
    {
      token: z.string().min(1).optional(),
      clientCertificateData: z.string().min(1).optional(),
      clientKeyData: z.string().min(1).optional(),
      expirationTimestamp: z.iso.datetime({ offset: true }).optional(),
    },
    { error: "missing: the plugin returned no status" },
  ),
});

/** A plugin's credential, fetched once and shared until it expires or is {@link invalidate}d. */
export class ExecCredentials {
  private cached: ExecCredential | undefined;
  private pending: Promise<ExecCredential> | undefined;

  constructor(
    private readonly exec: ExecConfig,
    private readonly o: {
      readonly cluster?: ExecClusterInfo;
      readonly timeoutMs: number;
      readonly run?: ExecRunner;
      readonly now?: () => number;
      readonly env?: NodeJS.ProcessEnv;
    },
  ) {}

  /** The current credential, running the plugin when there is none or it has expired. */
  async get(): Promise<ExecCredential> {
    const now = (this.o.now ?? Date.now)();
    if (this.cached && (this.cached.expiresAt === undefined || this.cached.expiresAt > now)) return this.cached;
    this.pending ??= this.fetch().finally(() => {
      this.pending = undefined;
    });
    return (this.cached = await this.pending);
  }

  /** Forgets the credential (the API server refused it), so the next request runs the plugin again. */
  invalidate(): void {
    this.cached = undefined;
  }

  private async fetch(): Promise<ExecCredential> {
    const { command, args, env, apiVersion, installHint } = this.exec;
    const info = {
      apiVersion,
      kind: "ExecCredential",
      spec: {
        interactive: false,
        ...(this.exec.provideClusterInfo && this.o.cluster ? { cluster: this.o.cluster } : {}),
      },
    };
    const childEnv: NodeJS.ProcessEnv = { ...(this.o.env ?? process.env) };
    for (const e of env ?? []) childEnv[e.name] = e.value;
    childEnv.KUBERNETES_EXEC_INFO = JSON.stringify(info);
    const what = `exec plugin ${command}`;
    let r: ExecResult;
    try {
      r = await (this.o.run ?? spawnExec)(command, args ?? [], childEnv, this.o.timeoutMs);
    } catch (e) {
      const missing = (e as NodeJS.ErrnoException).code === "ENOENT";
      throw new Error(
        `${what}: ${missing ? "not found" : errorMessage(e)}${missing && installHint ? `\n${installHint}` : ""}`,
      );
    }
    if (r.code !== 0)
      throw new Error(
        `${what} exited ${r.code ?? "on a signal"}${r.stderr.trim() ? `: ${r.stderr.trim().slice(0, 500)}` : ""}`,
      );
    let parsed: z.infer<typeof credentialSchema>;
    try {
      const result = credentialSchema.safeParse(JSON.parse(r.stdout));
      if (!result.success)
        throw new Error(
          zodIssues(result.error)
            .map((i) => `${i.path || "(root)"}: ${i.message}`)
            .join("; "),
        );
      parsed = result.data;
    } catch (e) {
      throw new Error(`${what} printed no valid ExecCredential: ${errorMessage(e)}`);
    }
    if (parsed.apiVersion !== apiVersion)
      throw new Error(`${what} answered in ${parsed.apiVersion}; the kubeconfig asks for ${apiVersion}`);
    const s = parsed.status;
    if ((s.clientCertificateData === undefined) !== (s.clientKeyData === undefined))
      throw new Error(`${what} returned a client certificate without its key, or a key without its certificate`);
    if (s.token === undefined && s.clientCertificateData === undefined)
      throw new Error(`${what} returned neither a token nor a client certificate and key`);
    return {
      ...(s.token !== undefined ? { token: s.token } : {}),
      ...(s.clientCertificateData !== undefined
        ? { cert: Buffer.from(s.clientCertificateData, "utf8"), key: Buffer.from(s.clientKeyData!, "utf8") }
        : {}),
      ...(s.expirationTimestamp !== undefined ? { expiresAt: Date.parse(s.expirationTimestamp) } : {}),
    };
  }
}
