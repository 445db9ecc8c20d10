/**
 * The real engines in tests: a throwaway control plane from the binaries set-up built, and
 * the Pulumi CLI run on a copy of the project with a local file backend, passphrase secrets
 * and automatic plugin acquisition off. Outside CI a missing engine skips the tests that need
 * it, saying so; in CI it fails them (set-up must have built it).
 */
import { type SpawnOptions, spawn } from "node:child_process";
import { type Engine, EngineMissingError, findEngines } from "../../agent/cluster/engines";
import { type ControlPlane, startControlPlane } from "../../agent/cluster/control-plane";
import {
  type PulumiProject as BasePulumiProject,
  pulumiProject as basePulumiProject,
} from "../../agent/cluster/pulumi-project";
import { tempDir } from "./temp";

/** The engines, or a skip reason (throws in CI). */
export function enginesOrSkip(...names: string[]): Record<string, Engine> | string {
  try {
    return findEngines(names);
  } catch (e) {
    if (!(e instanceof EngineMissingError)) throw e;
    if (process.env.CI === "true") throw new Error(`CI requires the real engines: ${e.message}`);
    process.stderr.write(`SKIPPED: ${e.message}\n`);
    return e.message;
  }
}

/** Starts a control plane from the engines set-up built. */
export async function startTestControlPlane(engines: Record<string, Engine>): Promise<ControlPlane> {
  const k8s = engines.kubernetes;
  const etcd = engines.etcd;
  if (!k8s || !etcd) throw new Error("startTestControlPlane needs the kubernetes and etcd engines");
  return startControlPlane({
    binaries: {
      etcd: etcd.binaries.etcd ?? "",
      kubeApiserver: k8s.binaries["kube-apiserver"] ?? "",
      kubeControllerManager: k8s.binaries["kube-controller-manager"] ?? "",
      kubeScheduler: k8s.binaries["kube-scheduler"] ?? "",
    },
  });
}

/** What a finished command printed. */
export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion (bounded by `timeoutMs`), capturing its output. */
export async function runCommand(
  command: string,
  args: readonly string[],
  options: SpawnOptions & { input?: string; timeoutMs?: number } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 600_000);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
    child.stdin?.end(options.input ?? "");
  });
}

/** A project copy with the CLI to run in it (see agent/cluster/pulumi-project.ts). */
export interface PulumiProject extends BasePulumiProject {
  /** Runs the pulumi CLI in the project (non-interactive). */
  pulumi(
    args: readonly string[],
    options?: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv },
  ): Promise<Ran>;
}

/** A project copy in a new temporary directory, with the CLI set-up built. */
export function pulumiProject(engines: Record<string, Engine>, extraEnv: NodeJS.ProcessEnv = {}): PulumiProject {
  const base = tempDir("winfleet-pulumi-");
  const project = basePulumiProject(engines, base, {
    PULUMI_CONFIG_PASSPHRASE: "winfleet-test-passphrase",
    ...extraEnv,
  });
  const cli = engines.pulumi?.binaries.pulumi ?? "pulumi";
  return {
    ...project,
    pulumi: (args, options = {}) =>
      runCommand(cli, [...args, "--non-interactive"], {
        cwd: project.dir,
        env: { ...project.env, ...options.env },
        ...(options.input !== undefined ? { input: options.input } : {}),
        timeoutMs: options.timeoutMs ?? 600_000,
      }),
  };
}
