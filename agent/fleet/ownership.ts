/**
 * Who owns a fleet's state directory: `fleet.json` names the running manager
 * (pid and its start identity, the stack, the status page's port and the token
 * its control API wants). A live owner is found and talked to; a dead one's
 * record is replaced.
 */
import { randomBytes } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { linuxProcessHost } from "../broker";
import { writeFileAtomic } from "../common";

const ownerSchema = z.object({
  pid: z.number().int(),
  identity: z.string().optional(),
  stack: z.string(),
  stackFile: z.string(),
  port: z.number().int(),
  token: z.string(),
  startedAt: z.string(),
});

/** The running manager of a state directory. */
export type Owner = z.infer<typeof ownerSchema>;

function file(stateDir: string): string {
  return join(stateDir, "fleet.json");
}

/** The live owner of `stateDir`, if any. */
export async function liveOwner(stateDir: string): Promise<Owner | undefined> {
  const text = await readFile(file(stateDir), "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  let owner: Owner;
  try {
    owner = ownerSchema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
  const now = await linuxProcessHost.identity(owner.pid);
  return now !== undefined && (owner.identity === undefined || owner.identity === now) ? owner : undefined;
}

/** Records this process as the owner. */
export async function claim(
  stateDir: string,
  stack: { stack: string; stackFile: string },
  port: number,
): Promise<Owner> {
  const owner: Owner = {
    pid: process.pid,
    identity: await linuxProcessHost.identity(process.pid),
    stack: stack.stack,
    stackFile: stack.stackFile,
    port,
    token: randomBytes(24).toString("hex"),
    startedAt: new Date().toISOString(),
  };
  await writeFileAtomic(file(stateDir), `${JSON.stringify(owner, null, 2)}\n`, { mode: 0o600, makeParents: true });
  return owner;
}

/** Removes the record if it is ours. */
export async function release(stateDir: string): Promise<void> {
  const text = await readFile(file(stateDir), "utf8").catch(() => undefined);
  if (text !== undefined && (JSON.parse(text) as { pid?: number }).pid === process.pid)
    await rm(file(stateDir), { force: true });
}
