/**
 * The fleet's content: the stack's content tree built into a bundle once per
 * distinct content, under `<state>/content/<digest>/`, so a host mid-apply
 * keeps reading the bundle its config names while a new one is built beside it.
 */
import { readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { buildContent } from "../content";

/** Builds `contentDir` and returns the bundle directory for it. */
export async function buildFleetContent(contentDir: string, stateDir: string): Promise<string> {
  const staging = join(stateDir, "content", ".next");
  await buildContent(contentDir, staging);
  const digest = createHash("sha256")
    .update(await readFile(join(staging, "manifest.json")))
    .digest("hex")
    .slice(0, 16);
  const bundle = join(stateDir, "content", digest);
  if (
    await stat(bundle).then(
      () => true,
      () => false,
    )
  )
    await rm(staging, { recursive: true, force: true });
  else await rename(staging, bundle);
  return bundle;
}
