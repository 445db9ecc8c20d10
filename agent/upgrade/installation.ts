/**
 * The agent's installation on a host: every version in `releases/<version>/`
 * and a `current` link naming the active one, which the service runs from.
 * Switching versions is one atomic rename of that link, so a host is always on
 * exactly one complete version, and going back is the same operation.
 */
import {
  cp,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  unlink,
} from "node:fs/promises";
import { basename, join } from "node:path";
import { AgentError, AgentErrorCode, errorMessage } from "../common";

/** Paths of an installation rooted at `dir`. */
export interface Installation {
  readonly dir: string;
  readonly releases: string;
  /** The link the service runs through. */
  readonly current: string;
}

/** The installation at `dir`. */
export function installationAt(dir: string): Installation {
  return { dir, releases: join(dir, "releases"), current: join(dir, "current") };
}

/** The version a bundle directory declares (its package.json), checked for the entry point. */
export async function bundleVersion(bundle: string): Promise<string> {
  let pkg: { name?: unknown; version?: unknown };
  try {
    pkg = JSON.parse(await readFile(join(bundle, "package.json"), "utf8")) as typeof pkg;
  } catch (e) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${bundle} is not an agent bundle: cannot read package.json: ${errorMessage(e)}`,
    );
  }
  if (pkg.name !== "winfleet" || typeof pkg.version !== "string" || !/^[0-9A-Za-z][0-9A-Za-z.+-]*$/.test(pkg.version)) {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${bundle} is not an agent bundle: package.json must be winfleet's with a version`,
    );
  }
  await stat(join(bundle, "bin", "winfleet-agent.js")).catch(() => {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${bundle} is not an agent bundle: bin/winfleet-agent.js is missing`,
    );
  });
  return pkg.version;
}

/** The active release's directory name (its version), or undefined before the first install. */
export async function activeVersion(inst: Installation): Promise<string | undefined> {
  await restoreCurrent(inst);
  try {
    return basename(await readlink(inst.current));
  } catch {
    return undefined;
  }
}

/** Where the Windows switch puts the old link aside for a moment (see {@link activate}). */
const ASIDE = /^\.previous\.\d+$/;

/**
 * Puts back a `current` an interrupted Windows switch left aside: between its
 * two renames there is no `current`, and a process killed there leaves the old
 * link under its other name.
 */
async function restoreCurrent(inst: Installation): Promise<void> {
  if (process.platform !== "win32" || (await lstat(inst.current).catch(() => undefined))) return;
  const aside = (await readdir(inst.dir).catch(() => [] as string[])).filter((n) => ASIDE.test(n)).sort();
  const last = aside.at(-1);
  if (last !== undefined) await rename(join(inst.dir, last), inst.current);
}

/**
 * Copies `bundle` into `releases/<version>` (staged, then renamed) unless that
 * version is already there. Everything is decided on the staged copy: `verify`
 * checks it, and the version is read from it, so what was checked is what
 * runs, even if the source is changed while it is copied (it may lie where a
 * pod can write), and a changed version cannot switch to another release.
 */
export async function installRelease(
  inst: Installation,
  bundle: string,
  verify?: (dir: string) => Promise<void>,
): Promise<string> {
  await bundleVersion(bundle); // refuses what is not a bundle before anything is written
  await mkdir(inst.releases, { recursive: true });
  const staging = await mkdtemp(join(inst.releases, ".staging-"));
  try {
    const copy = join(staging, "bundle");
    await cp(bundle, copy, { recursive: true, verbatimSymlinks: true });
    await verify?.(copy);
    const version = await bundleVersion(copy);
    const target = join(inst.releases, version);
    if (
      !(await stat(target).then(
        () => true,
        () => false,
      ))
    )
      await rename(copy, target);
    return version;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Points `current` at `releases/<version>`: a new link renamed over the old one,
 * atomically. On Windows `current` is a junction, and Windows renames nothing
 * over a directory, which a junction is: there the old one steps aside
 * (`.previous.<pid>`), the new one takes its name, and the old one goes, so
 * `current` is missing only between two renames (and put back by
 * {@link activeVersion} if a process dies there).
 */
export async function activate(inst: Installation, version: string): Promise<void> {
  const temp = join(inst.dir, `.current.${process.pid}`);
  await rm(temp, { force: true });
  const windows = process.platform === "win32";
  await symlink(join("releases", version), temp, windows ? "junction" : "dir").catch((e: unknown) => {
    throw new AgentError(
      AgentErrorCode.ApplyFailed,
      `cannot make ${windows ? "a junction" : "a link"} to releases/${version} in ${inst.dir}: ${errorMessage(e)}`,
    );
  });
  if (!windows) return rename(temp, inst.current);
  await restoreCurrent(inst);
  const aside = join(inst.dir, `.previous.${process.pid}`);
  const moved = await rename(inst.current, aside).then(
    () => true,
    (e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return false; // the first install
      return unlink(temp).then(() => Promise.reject(e));
    },
  );
  try {
    await rename(temp, inst.current);
  } catch (e) {
    if (moved) await rename(aside, inst.current);
    await unlink(temp).catch(() => undefined);
    throw e;
  }
  if (moved) await unlink(aside); // the junction itself, never what it points at
}
