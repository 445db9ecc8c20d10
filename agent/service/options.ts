/**
 * The lifecycle commands' shared options, and what the read-only ones
 * (`status`, `verify`) resolve them to: the root, and nothing that starts a
 * shell or loads the signing code. lifecycle-setup.ts resolves the same
 * options into the engine's dependencies for the commands that change a host.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { AgentError, AgentErrorCode, defaultRoot, ed25519KeyProblem } from "../common";
import type * as Config from "./config";
import type { AgentConfig } from "./config";

/** Options the lifecycle commands share, as the command line names them. */
export interface LifecycleOptions {
  readonly root?: string;
  readonly config?: string;
  readonly content?: string;
  readonly template?: string;
  readonly templateVersion?: string;
  readonly nodeName?: string;
  readonly kubeconfig?: string;
  readonly var?: readonly string[];
  readonly lenient?: boolean;
  readonly json?: boolean;
  /** A file holding the ed25519 public key (PEM) content bundles must be signed with; over the config's `publicKey`. */
  readonly publicKey?: string;
  /**
   * Accept signed content older than the version accepted before (logged and reported); or the config's
   * `allowDowngrade`.
   */
  readonly allowDowngrade?: boolean;
}

/** The host path of / the options (over the config) name. */
export function rootOf(opts: LifecycleOptions, config: AgentConfig | undefined): string {
  return resolve(opts.root ?? config?.root ?? defaultRoot());
}

/**
 * The root a read-only command works on. The config and the public key are
 * read as the other lifecycle commands read them, so a bad one fails here too.
 */
export async function resolveRoot(opts: LifecycleOptions): Promise<string> {
  // Loaded only when named: building the config's schemas is a cost a start that reads only the root need not pay.
  const config = opts.config
    ? // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on demand, as above
      await (require("./config") as typeof Config).loadAgentConfig(opts.config)
    : undefined;
  if (opts.publicKey !== undefined) readKey(opts.publicKey);
  return rootOf(opts, config);
}

/** The public key file a command was given, read; a clear error when it cannot be, or is not an ed25519 public key. */
export function readKey(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(resolve(file), "utf8");
  } catch (e) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `--public-key ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`,
    );
  }
  const problem = ed25519KeyProblem(pem);
  if (problem !== undefined) throw new AgentError(AgentErrorCode.InvalidInput, `--public-key ${file} ${problem}`);
  return pem;
}
