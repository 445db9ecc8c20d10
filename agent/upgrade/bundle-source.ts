/**
 * What `up --bundle` names: an agent bundle directory, or the archive
 * `winfleet release` writes beside it (`agent-<version>.tgz`, what a stack's
 * `agent.bundle` points at), unpacked into a private temporary directory. Either
 * way `up` then checks the directory as it would any other.
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentError, AgentErrorCode, errorMessage, untar } from "../common";

/** A bundle directory to install from; `done()` removes what was unpacked for it. */
export interface BundleSource {
  readonly dir: string;
  done(): Promise<void>;
}

/** Opens `path` (a bundle directory or a `.tgz` of one) as a bundle directory. */
export async function openBundle(path: string): Promise<BundleSource> {
  const s = await stat(path).catch((e: unknown) => {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `--bundle ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? errorMessage(e)})`,
    );
  });
  if (s.isDirectory()) return { dir: path, done: () => Promise.resolve() };
  if (!s.isFile() || !/\.(tgz|tar\.gz)$/.test(path)) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `--bundle ${path}: expected an agent bundle directory or the agent-<version>.tgz winfleet release writes`,
    );
  }
  const dir = await mkdtemp(join(tmpdir(), "winfleet-bundle-"));
  const done = (): Promise<void> => rm(dir, { recursive: true, force: true });
  try {
    await untar(path, dir);
  } catch (e) {
    await done();
    throw e;
  }
  return { dir, done };
}
