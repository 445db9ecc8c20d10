/**
 * A pod's containers as host processes, for the pod runner: a container's command started in its
 * pod's directory with its environment, run to its end, and ended as a kubelet ends a container.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { ContainerLogWriter } from "./container-log";
import { type Container, type PodHost, expand } from "./pod-model";

/** A container's command line: its `command`, then its `args`. */
export function commandOf(c: Container): string[] {
  return [...(c.command ?? []), ...(c.args ?? [])];
}

/**
 * Starts `words` for container `c` of the pod whose directory is `podDir`: `$(NAME)` expanded from the container's
 * environment and the host's, the first word mapped to a host command when the host maps it, output piped when it
 * goes to `log`.
 */
export function spawnContainer(
  host: PodHost,
  podDir: string,
  c: Container,
  words: readonly string[],
  log?: ContainerLogWriter,
): ChildProcess {
  const env: Record<string, string> = { ...host.env, CONTAINER_SANDBOX_MOUNT_POINT: podDir };
  for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = expand(e.value, env);
  const [first = "", ...rest] = words.map((w) => expand(w, env));
  const [cmd = first, ...pre] = host.commands[first] ?? [first];
  const child = spawn(cmd, [...pre, ...rest], {
    cwd: podDir,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: log ? ["ignore", "pipe", "pipe"] : "ignore",
  });
  child.on("error", () => undefined);
  return child;
}

/**
 * Waits for a process just started to end, its output in `log` (killed after `timeoutMs` when that is not 0): its exit
 * code, 127 when it could not start.
 */
export async function untilExit(child: ChildProcess, timeoutMs: number, log?: ContainerLogWriter): Promise<number> {
  const logged = Promise.all([
    child.stdout && log?.attach(child.stdout, "stdout"),
    child.stderr && log?.attach(child.stderr, "stderr"),
  ]);
  const code = await new Promise<number>((resolve) => {
    const timer = timeoutMs > 0 ? setTimeout(() => child.kill("SIGKILL"), timeoutMs) : undefined;
    child.once("error", () => resolve(127));
    child.once("exit", (code) => {
      if (timer) clearTimeout(timer);
      resolve(code ?? 1);
    });
  });
  await logged;
  return code;
}

/** Whether a process has not ended yet. */
export function alive(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

/** Ends processes as a kubelet ends containers: SIGTERM, then SIGKILL to those still running after `graceMs`. */
export async function endProcesses(processes: readonly ChildProcess[], graceMs: number): Promise<void> {
  const running = processes.filter(alive);
  const ended = running.map((p) => new Promise<void>((resolve) => p.once("exit", () => resolve())));
  for (const p of running) p.kill("SIGTERM");
  const killer = setTimeout(() => {
    for (const p of running) if (alive(p)) p.kill("SIGKILL");
  }, graceMs);
  await Promise.all(ended);
  clearTimeout(killer);
}
