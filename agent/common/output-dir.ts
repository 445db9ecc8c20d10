/**
 * Output directories that a command replaces as a whole (`render --out`,
 * `content build --out`, `release --out`): the new output is staged beside the
 * target and swapped in by two renames, so a reader sees the old output or the
 * new one, and a failure leaves the old one in place. A target that holds
 * anything the command did not write is refused, never deleted: `--out .` in a
 * checkout, or a home directory, must not be wiped by a typo.
 */
import type { Dirent } from "node:fs";
import { readdir, rename, rm, stat } from "node:fs/promises";
import { AgentError, AgentErrorCode } from "./errors";

/** What a command's earlier output looks like at its top. */
export interface OutputShape {
  /** What the command writes, for messages: "a content bundle". */
  readonly what: string;
  /** A file (relative, `/`-separated) that every earlier output has. */
  readonly marker: string;
  /** Whether a top-level entry is one the command writes. */
  readonly owns: (entry: Dirent) => boolean;
}

/**
 * Throws unless `dir` may be replaced: it does not exist, is an empty
 * directory, or is an earlier output of the same shape (its marker present and
 * nothing at its top that the command does not write).
 */
export async function assertReplaceable(dir: string, shape: OutputShape, flag = "--out"): Promise<void> {
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined) return;
  const refuse = (why: string): never => {
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `${flag} ${dir}: ${why}; it would be replaced as a whole, so name a new or empty directory, or remove it first`,
    );
  };
  if (!info.isDirectory()) refuse("is a file, not a directory");
  const entries = await readdir(dir, { withFileTypes: true });
  if (entries.length === 0) return;
  const foreign = entries.find((e) => !shape.owns(e));
  if (foreign !== undefined)
    refuse(`holds ${foreign.name}${foreign.isDirectory() ? "/" : ""}, which is not part of ${shape.what}`);
  const marked = await stat(`${dir}/${shape.marker}`).then(
    (s) => s.isFile(),
    () => false,
  );
  if (!marked) refuse(`is not empty and has no ${shape.marker}, so it is not ${shape.what} written earlier`);
}

/**
 * Puts `staged` in the place of `target` (checked with
 * {@link assertReplaceable} first): the old output is renamed aside, the new
 * one renamed in, and the old one removed last.
 */
export async function replaceDirectory(
  staged: string,
  target: string,
  shape: OutputShape,
  flag = "--out",
): Promise<void> {
  await assertReplaceable(target, shape, flag);
  const old = `${staged}.old`;
  await rm(old, { recursive: true, force: true });
  await rename(target, old).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== "ENOENT") throw e;
  });
  try {
    await rename(staged, target);
  } catch (e) {
    await rename(old, target).catch(() => undefined);
    throw e;
  }
  await rm(old, { recursive: true, force: true });
}
