/**
 * One apply at a time per root: `<root>/.winfleet/lock` names its holder (pid,
 * the process's start identity, command, since). A lock whose holder is dead —
 * or whose pid now belongs to another process — is taken over; a live one is
 * refused with a message that says who holds it.
 */
import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { AgentError, AgentErrorCode } from "../common/errors";
import { stateDir } from "./journal";

/** Who holds a lock. */
export interface Holder {
  readonly pid: number;
  /** Start identity of the process (so a recycled pid is not mistaken for the holder). */
  readonly identity: string | undefined;
  readonly command: string;
  readonly host: string;
  readonly since: string;
}

/** How the lock asks about processes (injected for tests and Windows). */
export interface ProcessProbe {
  identity(pid: number): Promise<string | undefined>;
}

/** A held lock. */
export interface Lock {
  release(): Promise<void>;
}

/** Takes the lock or throws an {@link AgentError} naming its holder. */
export async function acquireLock(root: string, command: string, probe: ProcessProbe): Promise<Lock> {
  const dir = stateDir(root);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, "lock");
  const me: Holder = { pid: process.pid, identity: await probe.identity(process.pid), command, host: hostname(), since: new Date().toISOString() };
  const text = `${JSON.stringify(me)}\n`;
  for (let attempt = 0; attempt < 5; attempt++) {
    const temp = join(dir, `.lock.${randomBytes(6).toString("hex")}`);
    await writeFile(temp, text, { mode: 0o600 });
    try {
      await link(temp, file); // fails if a lock exists: the atomic "create if absent"
      await rm(temp, { force: true });
      return { release: async () => releaseIfMine(file, text) };
    } catch (e) {
      await rm(temp, { force: true });
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const held = await readFile(file, "utf8").catch(() => undefined);
    if (held === undefined) continue; // released meanwhile: try again
    const holder = parseHolder(held);
    if (holder && (await alive(holder, probe))) {
      throw new AgentError(
        AgentErrorCode.AlreadyExists,
        `another winfleet-agent holds ${file}: pid ${holder.pid} (${holder.command}) on ${holder.host} since ${holder.since}. Wait for it to finish, or stop it.`,
      );
    }
    // Dead holder: move its lock aside, but only if it is still the one we judged.
    const aside = join(dir, `.lock.stale.${randomBytes(6).toString("hex")}`);
    await rename(file, aside).catch(() => undefined);
    const moved = await readFile(aside, "utf8").catch(() => undefined);
    if (moved !== undefined && moved !== held) await link(aside, file).catch(() => undefined); // a newer holder's: put it back
    await rm(aside, { force: true });
  }
  throw new AgentError(AgentErrorCode.AlreadyExists, `could not take ${file}: other agents keep taking it`);
}

function parseHolder(text: string): Holder | undefined {
  try {
    const h = JSON.parse(text) as Partial<Holder>;
    return typeof h.pid === "number" ? (h as Holder) : undefined;
  } catch {
    return undefined; // a torn or foreign lock file: treat its holder as dead
  }
}

async function alive(h: Holder, probe: ProcessProbe): Promise<boolean> {
  if (h.host !== hostname()) return true; // a shared root on another host: never steal it
  const now = await probe.identity(h.pid);
  if (now === undefined) return false;
  return h.identity === undefined || h.identity === now;
}

async function releaseIfMine(file: string, mine: string): Promise<void> {
  const held = await readFile(file, "utf8").catch(() => undefined);
  if (held === mine) await rm(file, { force: true });
}
