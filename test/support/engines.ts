/**
 * The real engines in tests: a throwaway control plane from the binaries set-up built, and
 * the Pulumi CLI run on a copy of the project with a local file backend, passphrase secrets
 * and automatic plugin acquisition off. Outside CI a missing engine skips the tests that need
 * it, saying so; in CI it fails them (set-up must have built it).
 */
import { type SpawnOptions, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import { type Engine, EngineMissingError, findEngines } from "../../agent/cluster/engines";
import { type ControlPlane, startControlPlane } from "../../agent/cluster/control-plane";
import { projectRoot } from "../../agent/common/project-root";

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
export async function runCommand(command: string, args: readonly string[], options: SpawnOptions & { input?: string; timeoutMs?: number } = {}): Promise<Ran> {
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

/** The project's files a Pulumi run needs, copied; node_modules is linked, not copied. */
const PROJECT_ENTRIES = ["Pulumi.yaml", "package.json", "tsconfig.json", "agent", "components", "infra", "content", "policy"];

/** A copy of the project with a Pulumi home and a file backend of its own, removed by `dispose`. */
export interface PulumiProject {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  /** Runs the pulumi CLI in the project (non-interactive). */
  pulumi(args: readonly string[], options?: { input?: string; timeoutMs?: number; env?: NodeJS.ProcessEnv }): Promise<Ran>;
  /** Writes `stacks/Pulumi.<stack>.yaml`. */
  writeStack(stack: string, yaml: string): void;
  dispose(): void;
}

/**
 * Copies the project into a temporary directory and prepares a Pulumi environment for it:
 * the CLI and language host first on PATH, a PULUMI_HOME holding the plugins set-up built,
 * a file backend, a passphrase, no update checks and no plugin downloads.
 */
export function pulumiProject(engines: Record<string, Engine>, extraEnv: NodeJS.ProcessEnv = {}): PulumiProject {
  const pulumiEngine = engines.pulumi;
  if (!pulumiEngine) throw new Error("pulumiProject needs the pulumi engine");
  const root = projectRoot();
  const base = mkdtempSync(join(tmpdir(), "winfleet-pulumi-"));
  const dir = join(base, "project");
  mkdirSync(join(dir, "stacks"), { recursive: true });
  for (const entry of PROJECT_ENTRIES) cpSync(join(root, entry), join(dir, entry), { recursive: true, filter: (src) => !src.includes(`${root}/.winfleet`) });
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  const home = join(base, "pulumi-home");
  mkdirSync(join(home, "plugins"), { recursive: true });
  // The engine lists plugin directories by type, so each is a real directory; the binaries in it are links.
  for (const e of Object.values(engines)) {
    if (!e.plugin) continue;
    const dir = join(home, "plugins", basename(e.plugin));
    mkdirSync(dir);
    for (const f of readdirSync(e.plugin)) symlinkSync(join(e.plugin, f), join(dir, f));
  }
  const backend = join(base, "backend");
  mkdirSync(backend);
  const bin = dirname(pulumiEngine.binaries.pulumi ?? "");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bin}${delimiter}${process.env.PATH ?? ""}`,
    PULUMI_HOME: home,
    PULUMI_BACKEND_URL: `file://${backend}`,
    PULUMI_CONFIG_PASSPHRASE: "winfleet-test-passphrase",
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
    NODE_OPTIONS: "",
    ...extraEnv,
  };
  return {
    dir,
    env,
    pulumi: (args, options = {}) =>
      runCommand(pulumiEngine.binaries.pulumi ?? "pulumi", [...args, "--non-interactive"], {
        cwd: dir,
        env: { ...env, ...options.env },
        ...(options.input !== undefined ? { input: options.input } : {}),
        timeoutMs: options.timeoutMs ?? 600_000,
      }),
    writeStack: (stack, yaml) => writeFileSync(join(dir, "stacks", `Pulumi.${stack}.yaml`), yaml),
    dispose: () => rmSync(base, { recursive: true, force: true }),
  };
}
