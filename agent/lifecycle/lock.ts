/**
 * One apply at a time per root. The lock itself is a listening endpoint the
 * operating system gives to one process only and takes back when that process
 * ends, however it ends: an abstract Unix socket on Linux, a named pipe
 * (created as its first instance) on Windows, both named after the root's
 * state directory and a random key kept in it. No agent ever judges another
 * dead and takes its lock, so any number starting at once cannot both hold it.
 * Abstract sockets and pipe names have no permissions of their own: the key
 * (`lock-key`, readable by the agent's user only) keeps another local user
 * from computing the name and holding it first. `<root>/.winfleet/lock`
 * only names the holder (pid, command, since) for the message others see.
 */
import { createHash, randomBytes } from "node:crypto";
import { link, rm, writeFile } from "node:fs/promises";
import { type Server, createServer } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import {
  type ConfinedDir,
  AgentError,
  AgentErrorCode,
  errorMessage,
  readFileIn,
  realPathOf,
  removeIn,
  writeFileIn,
} from "../common";
import { stateOf } from "./journal";

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

/**
 * The endpoint that is the lock for a state directory (its real path, so two
 * spellings of one root share one lock; case-folded on Windows).
 */
export function lockEndpoint(realStateDir: string, key: string, platform: NodeJS.Platform = process.platform): string {
  const digest = createHash("sha256")
    .update(key)
    .update("\0")
    .update(platform === "win32" ? realStateDir.toLowerCase() : realStateDir)
    .digest("hex");
  return platform === "win32" ? `\\\\.\\pipe\\winfleet-lock-${digest}` : `\0winfleet-lock-${digest}`;
}

function listen(endpoint: string): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer((c) => c.destroy());
    server.once("error", (e: NodeJS.ErrnoException) => (e.code === "EADDRINUSE" ? resolve(undefined) : reject(e)));
    server.listen(endpoint, () => {
      server.unref(); // the lock must not keep the agent running
      resolve(server);
    });
  });
}

/** Takes the lock or throws an {@link AgentError} naming its holder. */
export async function acquireLock(root: string, command: string, probe: ProcessProbe): Promise<Lock> {
  // The state directory is made (or refused: a link, or another user's) before anything else.
  const state = stateOf(root);
  const real = realPathOf(state);
  const file = join(state.path, "lock");
  const server = await listen(lockEndpoint(real, await lockKey(state))).catch((e: unknown) => {
    throw new AgentError(AgentErrorCode.ApplyFailed, `cannot take the lock for ${state.path}: ${errorMessage(e)}`);
  });
  if (!server)
    throw new AgentError(
      AgentErrorCode.AlreadyExists,
      `another winfleet-agent holds ${file}: ${await describeHolder(state, probe)}. Wait for it to finish, or stop it.`,
    );
  const me: Holder = {
    pid: process.pid,
    identity: await probe.identity(process.pid),
    command,
    host: hostname(),
    since: new Date().toISOString(),
  };
  const text = `${JSON.stringify(me)}\n`;
  try {
    await writeFileIn(state, "lock", text, { mode: 0o600 });
  } catch (e) {
    server.close();
    throw e;
  }
  return {
    release: async () => {
      // The record goes first: once the endpoint closes, the next holder writes its own.
      try {
        removeIn(state, "lock");
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

/**
 * The state directory's lock key, made once: written to a temp file and linked
 * into place, so agents starting together all end up reading the same key.
 */
async function lockKey(state: ConfinedDir): Promise<string> {
  const existing = (await readFileIn(state, "lock-key"))?.toString("utf8");
  if (existing?.trim()) return existing.trim();
  await state.use(async (dir) => {
    const temp = join(dir, `.lock-key.${randomBytes(6).toString("hex")}`);
    await writeFile(temp, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
    try {
      await link(temp, join(dir, "lock-key")).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== "EEXIST") throw e;
      });
    } finally {
      await rm(temp, { force: true });
    }
  });
  return ((await readFileIn(state, "lock-key"))?.toString("utf8") ?? "").trim();
}

/** The holder as its record names it, when that record is its (it may be a dead one's, not yet replaced). */
async function describeHolder(state: ConfinedDir, probe: ProcessProbe): Promise<string> {
  const h = parseHolder((await readFileIn(state, "lock").catch(() => undefined))?.toString("utf8") ?? "");
  if (
    h &&
    h.host === hostname() &&
    (await probe.identity(h.pid)) !== undefined &&
    (h.identity === undefined || h.identity === (await probe.identity(h.pid)))
  ) {
    return `pid ${h.pid} (${h.command}) on ${h.host} since ${h.since}`;
  }
  return "a process that has not recorded itself yet";
}

function parseHolder(text: string): Holder | undefined {
  try {
    const h = JSON.parse(text) as Partial<Holder>;
    return typeof h.pid === "number" ? (h as Holder) : undefined;
  } catch {
    return undefined;
  }
}
