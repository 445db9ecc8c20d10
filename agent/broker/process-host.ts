/**
 * What the broker needs from the OS about processes: a stable identity (so a
 * recycled pid is never mistaken for our process) and killing a whole tree.
 * Linux reads /proc; Windows lives in process-host.win32.ts.
 */
import { readFile, readdir } from "node:fs/promises";

/** OS process operations the broker depends on. */
export interface ProcessHost {
  /** An identity that changes when the pid is reused (its start time), or undefined when no such process runs. */
  identity(pid: number): Promise<string | undefined>;
  /** Kills `pid` and every process descended from it. */
  killTree(pid: number): Promise<void>;
}

async function stat(pid: number): Promise<{ ppid: number; start: string } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name, which may itself contain spaces.
    const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
    if (rest[0] === "Z") return undefined; // a zombie has already exited
    return { ppid: Number(rest[1]), start: rest[19] ?? "" };
  } catch {
    return undefined;
  }
}

/** The Linux implementation, from /proc. */
export const linuxProcessHost: ProcessHost = {
  async identity(pid) {
    return (await stat(pid))?.start;
  },
  async killTree(pid) {
    // Find descendants first: once the parent dies they are re-parented and lost.
    const children = new Map<number, number[]>();
    for (const name of await readdir("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      const s = await stat(Number(name));
      if (s) children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(name)]);
    }
    const tree: number[] = [];
    const visit = (p: number): void => {
      tree.push(p);
      for (const c of children.get(p) ?? []) visit(c);
    };
    visit(pid);
    const kill = (target: number): void => {
      try {
        process.kill(target, "SIGKILL");
      } catch {
        // already gone
      }
    };
    kill(-pid); // the process group the broker created for it
    for (const p of tree) kill(p);
  },
};
