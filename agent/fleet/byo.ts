/**
 * A bring-your-own-hosts lab on this machine (`winfleet local byo`): a throwaway control plane,
 * sandbox hosts reached only over SSH (agent/ssh), the agent bundle as a release file, and a
 * copy of the project whose stack adopts the hosts through the real Pulumi engine and the
 * `command` plugin set-up built, the hosts' keys pinned. What `pulumi up` then does is what it
 * does to Windows hosts, with the POSIX twin of the bootstrap: copy the content and the
 * bootstrap over SSH, run it with the secrets on standard input, start the agent as a service,
 * join by TLS bootstrap with the token the stack derived for the host. The lab runs winfleet's
 * node approver against its control plane, as a stack without an approver image has its
 * operator run it: nothing else approves a node's first certificate. The end-to-end tests drive
 * the same lab.
 */
import { spawn } from "node:child_process";
import { randomInt } from "node:crypto";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import {
  type ControlPlane,
  findEngines,
  KubeClient,
  publishClusterInfo,
  pulumiProject,
  runNodeApprover,
  startControlPlane,
} from "../cluster";
import { projectRoot } from "../common";
import { buildBundles } from "../release";
import { type NetworkMode, type SshHosts, startSshHosts } from "../ssh";
import { AGENT_VERSION } from "../version";
import { archiveDirectory, defaultNamespace } from "../../components";

/** The engines a lab runs. */
export const BYO_ENGINES = ["kubernetes", "etcd", "pulumi", "pulumi-resource-kubernetes", "pulumi-resource-command"];

/** The agent bundle as a release ships it: a deterministic .tgz, and where the hosts download it from. */
export interface AgentArchive {
  readonly path: string;
  readonly url: string;
  readonly sha256: string;
  readonly version: string;
}

/** Builds the agent bundle from the sources and archives it into `dir` (readable by the hosts' users). */
export async function agentArchive(dir: string): Promise<AgentArchive> {
  const out = join(dir, "dist");
  await buildBundles(projectRoot(), out, ["agent"]);
  const { data, sha256 } = await archiveDirectory(join(out, "agent"));
  const path = join(dir, `winfleet-agent-${AGENT_VERSION}.tgz`);
  await writeFile(path, data);
  await chmod(path, 0o644);
  return { path, url: pathToFileURL(path).href, sha256, version: AGENT_VERSION };
}

/** The fleet a lab's stack starts with: a POSIX BYO pool of the hosts, joining the control plane. */
export function byoFleet(cp: Pick<ControlPlane, "server" | "caCertHash">, hosts: SshHosts, agent: AgentArchive) {
  return {
    cluster: {
      name: "byo",
      join: {
        method: "kubeadm",
        apiServer: cp.server,
        caCertHash: cp.caCertHash,
        tokenId: "byolab",
        tokenSecret: "bootstrapTokenSecret",
      },
    },
    content: { dir: "content", template: "sandbox", templateVersion: "1.0.0" },
    agent: { version: agent.version, bundle: { url: agent.url, sha256: agent.sha256 } },
    pools: [
      {
        name: "lab",
        kind: "byo",
        platform: "posix",
        registerTaint: false,
        hosts: hosts.hosts.map((h, i) => ({
          name: h.name,
          address: h.address,
          port: h.port,
          user: h.user,
          privateKeySecret: `sshKey${i + 1}`,
          hostKey: h.hostKey,
        })),
      },
    ],
    upgrader: { mode: "hostProcess", maxUnavailable: 1, image: `winfleet-agent:${agent.version}` },
  };
}

/** What a pulumi command printed. */
export interface PulumiRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running lab. */
export interface ByoLab {
  readonly cp: ControlPlane;
  readonly admin: KubeClient;
  readonly hosts: SshHosts;
  readonly agent: AgentArchive;
  /** The project copy Pulumi runs in, and the environment it runs with. */
  readonly project: { readonly dir: string; readonly env: NodeJS.ProcessEnv };
  readonly stack: string;
  /** The stack's fleet as its file has it now. */
  fleet(): Promise<Record<string, unknown>>;
  /** Rewrites the stack's fleet, keeping its secrets. */
  writeFleet(fleet: unknown): Promise<void>;
  /** Runs the Pulumi CLI in the project (`--non-interactive` added); `echo` streams its output too. */
  pulumi(args: readonly string[], options?: { echo?: boolean; timeoutMs?: number }): Promise<PulumiRun>;
  /** Stops the hosts and the control plane and removes the project copy. */
  stop(): Promise<void>;
}

/** Options of {@link startByoLab}. */
export interface ByoLabOptions {
  readonly dir: string;
  readonly hosts: number;
  readonly stack?: string;
  readonly mode?: NetworkMode | "auto";
  readonly log?: (line: string) => void;
}

/**
 * Starts the control plane (publishing cluster-info, as `kubeadm init` does), the SSH hosts and
 * a project copy whose stack names them, with the stack's secrets set (the bootstrap token, each
 * host's private key). Nothing is deployed yet: that is `pulumi up`.
 */
export async function startByoLab(o: ByoLabOptions): Promise<ByoLab> {
  const log = o.log ?? (() => undefined);
  const engines = findEngines(BYO_ENGINES);
  const stack = o.stack ?? "byo";
  await mkdir(o.dir, { recursive: true });
  // The hosts' users reach their homes and the agent bundle under it.
  await chmod(o.dir, 0o755);
  const k8s = engines.kubernetes;
  const etcd = engines.etcd;
  const cli = engines.pulumi?.binaries.pulumi ?? "pulumi";
  const cp = await startControlPlane({
    dir: join(o.dir, "control-plane"),
    binaries: {
      etcd: etcd?.binaries.etcd ?? "",
      kubeApiserver: k8s?.binaries["kube-apiserver"] ?? "",
      kubeControllerManager: k8s?.binaries["kube-controller-manager"] ?? "",
      kubeScheduler: k8s?.binaries["kube-scheduler"] ?? "",
    },
    log,
  });
  const cleanups: (() => Promise<void>)[] = [() => cp.stop({ keepDir: true })];
  const stop = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch((e: unknown) => log(`stopping: ${String(e)}`));
  };
  try {
    const admin = KubeClient.fromKubeconfigFile(cp.adminKubeconfig);
    await publishClusterInfo(admin, cp.server, cp.caPem);
    // It reads the names each token was made for from the stack's namespace (the default: the fleet names none).
    const approver = new AbortController();
    const approving = runNodeApprover(admin, defaultNamespace(stack), {
      signal: approver.signal,
      intervalMs: 1000,
      onPass: (p) => {
        for (const csr of p.approved) log(`node approver: approved ${csr}`);
        for (const d of p.denied) log(`node approver: denied ${d.csr}: ${d.reason}`);
      },
      onError: (e) => log(`node approver: ${String(e)}`),
    });
    cleanups.push(() => {
      approver.abort();
      return approving;
    });
    const apiPort = Number(new URL(cp.server).port);
    const hosts = await startSshHosts({
      count: o.hosts,
      dir: join(o.dir, "hosts"),
      ...(o.mode ? { mode: o.mode } : {}),
      forwardPorts: [apiPort],
      log,
    });
    cleanups.push(() => hosts.stop());
    log(`${hosts.hosts.length} sandbox hosts over SSH (${hosts.mode}); building the agent bundle…`);
    const agent = await agentArchive(join(o.dir, "release"));
    const project = pulumiProject(engines, join(o.dir, "pulumi"), {
      KUBECONFIG: cp.adminKubeconfig,
      PULUMI_CONFIG_PASSPHRASE: "winfleet-byo-lab",
      // The command provider would offer an ssh-agent's keys too; the lab's hosts take their own key alone.
      SSH_AUTH_SOCK: "",
    });
    cleanups.push(() => Promise.resolve(project.dispose()));
    const file = join(project.dir, "stacks", `Pulumi.${stack}.yaml`);
    const pulumi = (args: readonly string[], opts: { echo?: boolean; timeoutMs?: number } = {}) =>
      runPulumi(cli, project.dir, project.env, [...args, "--non-interactive"], opts);
    const must = async (args: string[]) => {
      const r = await pulumi(args);
      if (r.code !== 0) throw new Error(`pulumi ${args.join(" ")} exited ${r.code}: ${r.stderr || r.stdout}`);
    };
    project.writeStack(stack, toYaml({ config: { "winfleet:fleet": byoFleet(cp, hosts, agent) } }));
    await must(["stack", "init", stack, "--secrets-provider", "passphrase"]);
    await must([
      "config",
      "set-all",
      "--secret",
      `winfleet:bootstrapTokenSecret=${randomToken()}`,
      ...hosts.hosts.flatMap((h, i) => ["--secret", `winfleet:sshKey${i + 1}=${h.privateKey}`]),
    ]);
    const readDoc = async () => parseYaml(await readFile(file, "utf8")) as { config: Record<string, unknown> };
    return {
      cp,
      admin,
      hosts,
      agent,
      project,
      stack,
      fleet: async () => (await readDoc()).config["winfleet:fleet"] as Record<string, unknown>,
      writeFleet: async (fleet) => {
        const doc = await readDoc();
        doc.config["winfleet:fleet"] = fleet;
        await writeFile(file, toYaml(doc));
      },
      pulumi,
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** 16 characters of [a-z0-9]: a bootstrap token's secret. */
function randomToken(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: 16 }, () => alphabet[randomInt(alphabet.length)]).join("");
}

function runPulumi(
  cli: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  args: readonly string[],
  o: { echo?: boolean; timeoutMs?: number },
): Promise<PulumiRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (o.echo) process.stdout.write(d);
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (o.echo) process.stderr.write(d);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 1_800_000);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
  });
}

/** Options of {@link localByo}. */
export interface LocalByoOptions {
  readonly stateDir: string;
  readonly hosts: number;
  readonly stop: AbortSignal;
}

/**
 * `winfleet local byo`: the lab, `pulumi up` of its stack (the output streamed), the nodes
 * joined and converged, then held until `stop`: then `pulumi destroy`, and everything removed.
 * Returns the exit code.
 */
export async function localByo(o: LocalByoOptions, out: NodeJS.WritableStream): Promise<number> {
  const say = (line: string) => out.write(`${line}\n`);
  const lab = await startByoLab({ dir: join(o.stateDir, "byo"), hosts: o.hosts, log: say });
  try {
    say(`pulumi up -s ${lab.stack} in ${lab.project.dir}…`);
    const r = await lab.pulumi(["up", "--yes", "--skip-preview", "--parallel", "16"], { echo: true });
    if (r.code !== 0) {
      say(`pulumi up failed (exit ${r.code}); the lab is removed`);
      return 1;
    }
    const names = lab.hosts.hosts.map((h) => h.name);
    say("waiting for the nodes to report WinfleetReady…");
    type Node = { metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } };
    await lab.admin.waitFor(
      async () => {
        const nodes = (await lab.admin.get<{ items: Node[] }>("/api/v1/nodes")).items;
        const ready = (n: Node) => n.status?.conditions?.some((c) => c.type === "WinfleetReady" && c.status === "True");
        return names.every((name) => nodes.some((n) => n.metadata.name === name && ready(n))) || undefined;
      },
      600_000,
      "every host's node to report WinfleetReady",
    );
    say(`\n${names.length} hosts adopted over SSH and joined. Try:`);
    say(`  KUBECONFIG=${lab.cp.adminKubeconfig} kubectl get nodes`);
    for (const h of lab.hosts.hosts)
      say(`  ssh -i ${h.privateKeyFile} -p ${h.port} ${h.user}@${h.address}    # ${h.name}`);
    say(`  edit ${join(lab.project.dir, "stacks", `Pulumi.${lab.stack}.yaml`)} (templateVersion: 1.1.0) and run`);
    say(`  pulumi up -s ${lab.stack} in ${lab.project.dir} with the environment below`);
    say(
      `  PULUMI_HOME=${lab.project.env.PULUMI_HOME ?? ""} PULUMI_BACKEND_URL=${lab.project.env.PULUMI_BACKEND_URL ?? ""}`,
    );
    say("Ctrl-C destroys the stack and removes the hosts and the cluster.");
    await new Promise<void>((resolve) => o.stop.addEventListener("abort", () => resolve(), { once: true }));
    say("pulumi destroy…");
    const d = await lab.pulumi(["destroy", "--yes", "--skip-preview"], { echo: true });
    return d.code === 0 ? 0 : 1;
  } finally {
    await lab.stop();
    say("stopped: no host, process or namespace of the lab is left");
  }
}

/** `winfleet local ssh-hosts`: N sandbox hosts over SSH, printed as a BYO pool's hosts, until `stop`. */
export async function localSshHosts(
  o: { readonly stateDir: string; readonly hosts: number; readonly stop: AbortSignal },
  out: NodeJS.WritableStream,
): Promise<number> {
  const hosts = await startSshHosts({ count: o.hosts, dir: join(o.stateDir, "ssh-hosts") });
  try {
    out.write(`${hosts.hosts.length} sandbox hosts (${hosts.mode}). As a BYO pool's hosts (platform: posix):\n`);
    out.write(
      toYaml({
        hosts: hosts.hosts.map((h, i) => ({
          name: h.name,
          address: h.address,
          port: h.port,
          user: h.user,
          privateKeySecret: `sshKey${i + 1}`,
          hostKey: h.hostKey,
        })),
      }),
    );
    for (const [i, h] of hosts.hosts.entries())
      out.write(`pulumi config set --secret winfleet:sshKey${i + 1} "$(cat ${h.privateKeyFile})"\n`);
    out.write("Ctrl-C stops them and removes their users, keys and addresses.\n");
    await new Promise<void>((resolve) => o.stop.addEventListener("abort", () => resolve(), { once: true }));
    return 0;
  } finally {
    await hosts.stop();
  }
}
