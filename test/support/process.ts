/**
 * Processes and ports in tests: whether a pid is alive, a child's exit as a
 * promise, stopping a child (or its whole process group) and waiting for it to
 * be gone, children killed after the file's tests, and loopback ports.
 */
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { after } from "node:test";

/** Whether `pid` is alive and not a zombie (a killed child whose parent has not reaped it yet). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The exit code of `child` (null when a signal ended it), once it has exited; at once if it already has. */
export function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/**
 * Sends `signal` to `child`'s process group (a child started `detached`), or to the child alone; a gone process is no
 * error.
 */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // gone
    }
  }
}

/**
 * Kills, after the file's tests, every child added to the returned list that is
 * still running, with its process group: a test that failed half-way must not
 * leave a process behind (it would keep the test file alive).
 */
export function killedAfterTests(): ChildProcess[] {
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) signalGroup(c, "SIGKILL");
  });
  return children;
}

/** A loopback port that nothing listened on a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether something accepts a TCP connection on `port` on loopback now. */
export function portOpen(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
