/**
 * `winfleet local …` as functions: `up` starts a fleet manager (or, when one
 * already owns the state directory, hands it the stack again and follows the
 * rollout), and the helpers `status`, `down`, `logs` and `exec` use. Every
 * function returns an exit code; nothing here prints except through `out`.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { AgentError, AgentErrorCode, projectRoot } from "../common";
import { readJournal, statusOf } from "../lifecycle";
import { readStackFile, stackPath } from "../../infra/public";
import { applySpec, fleetStatus, followEvents, shutdownFleet } from "./client";
import { type LocalCluster, startLocalCluster } from "./cluster";
import { FleetManager, describeResult } from "./manager";
import { claim, liveOwner, release } from "./ownership";
import { startServer } from "./server";
import { type FleetSpec, hostPaths } from "./spec";
import { FleetDisplay, type Out, fleetTable } from "./terminal";

/** Where a fleet keeps its hosts unless told otherwise, relative to the working directory. */
export const DEFAULT_STATE_DIR = ".winfleet/local";

/** The agent entry script the hosts run: `WINFLEET_AGENT_ENTRY`, else the checkout's bin/winfleet-agent.js. */
export function agentEntry(): string {
  return process.env.WINFLEET_AGENT_ENTRY ?? join(projectRoot(), "bin", "winfleet-agent.js");
}

/** Options of `winfleet local up`. */
export interface UpOptions {
  readonly stack: string;
  readonly hosts?: number;
  readonly port: number;
  readonly stateDir: string;
  readonly agentEntry: string;
  readonly json: boolean;
  /** Run the production loop: a local control plane, the cluster side deployed by Pulumi, hosts joined as nodes. */
  readonly cluster?: boolean;
  /** Resolves when the fleet must stop (Ctrl-C). */
  readonly stop: AbortSignal;
}

/** The fleet spec from a stack's first `local` pool. */
export async function specFromStack(stack: string, hosts?: number, cluster?: boolean): Promise<FleetSpec> {
  const s = await readStackFile(stack);
  const pool = s.fleet.pools.find((p) => p.kind === "local");
  if (!pool || pool.kind !== "local")
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `stack ${s.stack} (${s.file}) has no pool of kind local: winfleet local runs only local pools`,
    );
  if (hosts !== undefined && (!Number.isInteger(hosts) || hosts < 1 || hosts > 50))
    throw new AgentError(AgentErrorCode.InvalidInput, `--hosts ${hosts}: expected a whole number from 1 to 50`);
  return {
    stack: s.stack,
    stackFile: s.file,
    pool: pool.name,
    hosts: hosts ?? pool.hosts,
    maxUnavailable: pool.maxUnavailable,
    content: stackPath(s.fleet.content.dir),
    template: s.fleet.content.template,
    templateVersion: s.fleet.content.templateVersion,
    cluster: cluster === true || pool.cluster,
    ...(pool.drain ? { drain: pool.drain } : {}),
  };
}

/** `winfleet local up`. */
export async function localUp(options: UpOptions, out: Out, err: Out): Promise<number> {
  const spec = await specFromStack(options.stack, options.hosts, options.cluster);
  const owner = await liveOwner(options.stateDir);
  if (owner) {
    if (owner.stackFile !== spec.stackFile) {
      throw new AgentError(
        AgentErrorCode.AlreadyExists,
        `${options.stateDir} is owned by the running fleet of stack ${owner.stack} (pid ${owner.pid}); stop it with \`winfleet local down\` or choose another --state-dir`,
      );
    }
    out.write(
      `the fleet of stack ${spec.stack} is running (pid ${owner.pid}, http://127.0.0.1:${owner.port}/): rolling ${spec.template} ${spec.templateVersion} to ${spec.hosts} hosts, ${spec.maxUnavailable} at a time\n`,
    );
    const display = new FleetDisplay(out, options.json);
    const unfollow = followEvents(owner, (e) => display.event(e));
    try {
      const result = await applySpec(owner, spec);
      display.settle((await fleetStatus(owner)).hosts);
      out.write(`${describeResult(result)}\n`);
      return result.kind === "done" ? 0 : 1;
    } finally {
      unfollow();
      display.close();
    }
  }

  let manager: FleetManager | undefined;
  let cluster: LocalCluster | undefined;
  let token = "";
  let stopRequested = false;
  const stopped = new Promise<void>((resolve) => {
    if (options.stop.aborted) resolve();
    options.stop.addEventListener("abort", () => resolve(), { once: true });
  });
  let shutdownHook: () => void = () => undefined;
  const remote = new Promise<void>((resolve) => (shutdownHook = resolve));
  const { server, port } = await startServer(options.port, {
    manager: () => manager,
    token: () => token,
    acceptSpec: (body) => checkSpec(body, spec),
    cluster: () => cluster?.view(),
    shutdown: () => {
      stopRequested = true;
      shutdownHook();
    },
  });
  try {
    token = (await claim(options.stateDir, spec, port)).token;
    if (spec.cluster)
      cluster = await startLocalCluster(
        spec,
        options.stateDir,
        (line) => out.write(`cluster: ${line}\n`),
        (host) => manager?.host(host)?.running() !== false,
      );
    manager = new FleetManager(spec, {
      stateDir: options.stateDir,
      agentEntry: options.agentEntry,
      ...(cluster ? { kubeconfigFor: cluster.kubeconfigFor, deploy: cluster.deploy, settled: cluster.settled } : {}),
    });
    const display = new FleetDisplay(out, options.json);
    manager.subscribe((e) => display.event(e));
    out.write(
      `winfleet local: stack ${spec.stack} (${spec.stackFile}): ${spec.template} ${spec.templateVersion} on ${spec.hosts} hosts\nstatus page: http://127.0.0.1:${port}/\n`,
    );
    if (cluster)
      out.write(`kubeconfig: ${cluster.kubeconfig}  (kubectl --kubeconfig ${cluster.kubeconfig} get nodes)\n`);
    const started = Date.now();
    const result = await Promise.race([
      manager.apply(spec),
      stopped.then(() => undefined),
      remote.then(() => undefined),
    ]);
    if (result?.kind === "done") cluster?.startPods(options.agentEntry);
    if (result) {
      display.settle(manager.status().hosts);
      out.write(
        `${describeResult(result)} (${((Date.now() - started) / 1000).toFixed(1)} s)\nthe fleet keeps running: Ctrl-C (or \`winfleet local down\`) stops it\n`,
      );
      if (result.kind !== "done") err.write(`winfleet local: ${describeResult(result)}\n`);
    }
    await Promise.race([stopped, remote]);
    out.write(stopRequested ? "stopping (winfleet local down)…\n" : "stopping…\n");
    display.close();
    await manager.shutdown();
    return result && result.kind !== "done" ? 1 : 0;
  } finally {
    await manager?.shutdown();
    await cluster?.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await release(options.stateDir);
  }
}

function checkSpec(body: unknown, running: FleetSpec): FleetSpec {
  const b = body as Partial<FleetSpec>;
  if (
    typeof b.template !== "string" ||
    typeof b.templateVersion !== "string" ||
    typeof b.content !== "string" ||
    !Number.isInteger(b.hosts) ||
    !Number.isInteger(b.maxUnavailable)
  ) {
    throw new Error("expected a fleet spec: content, template, templateVersion, hosts, maxUnavailable");
  }
  return { ...running, ...b };
}

/** `winfleet local status`: from the running manager, or from each host's journal when none runs. */
export async function localStatus(stateDir: string, json: boolean, out: Out): Promise<number> {
  const owner = await liveOwner(stateDir);
  if (owner) {
    const s = await fleetStatus(owner);
    out.write(
      json
        ? `${JSON.stringify({ running: true, ...s }, null, 2)}\n`
        : `stack ${s.stack}: desired ${s.desired.template} ${s.desired.templateVersion} on ${s.desired.hosts} hosts (running, http://127.0.0.1:${owner.port}/)\n${fleetTable(s.hosts)}`,
    );
    return 0;
  }
  const names = (await readdir(join(stateDir, "hosts")).catch(() => [])).sort();
  const hosts = await Promise.all(
    names.map(async (name) => {
      const s = statusOf(await readJournal(hostPaths(stateDir, name).root));
      return {
        name,
        state: s.state,
        template: s.template,
        components: s.components,
        failure: s.failure,
        drain: s.drain,
      };
    }),
  );
  if (json) out.write(`${JSON.stringify({ running: false, hosts }, null, 2)}\n`);
  else if (hosts.length === 0) out.write(`no local fleet in ${stateDir}: start one with winfleet local up\n`);
  else {
    out.write(`the fleet in ${stateDir} is not running; its hosts as their journals say:\n`);
    out.write(
      fleetTable(
        hosts.map((h) => ({
          name: h.name,
          state: h.state === "converged" || h.state === "failed" || h.state === "draining" ? h.state : "stopped",
          ...(h.template ? { template: h.template } : {}),
          // A drain the journal says is under way (the host stopped while draining, or before its uncordon).
          ...(h.drain && h.drain.state !== "skipped"
            ? {
                drain: {
                  reasons: [...h.drain.reasons],
                  evicted: h.drain.evicted.length,
                  waitingFor: h.drain.waiting.map((w) => `${w.pod} (${w.why})`),
                  since: h.drain.startedAt,
                },
              }
            : {}),
          desired: h.template ?? { name: "", version: "" },
          components: [...h.components],
          reboots: 0,
          restarts: 0,
          broker: "",
        })),
      ),
    );
  }
  return 0;
}

/** `winfleet local down`. */
export async function localDown(stateDir: string, out: Out): Promise<number> {
  const owner = await liveOwner(stateDir);
  if (!owner) {
    out.write(`no fleet is running in ${stateDir}\n`);
    return 0;
  }
  await shutdownFleet(owner);
  for (let i = 0; i < 300 && (await liveOwner(stateDir)); i++) await new Promise((r) => setTimeout(r, 100));
  if (await liveOwner(stateDir))
    throw new AgentError(AgentErrorCode.FetchFailed, `the fleet manager (pid ${owner.pid}) did not stop within 30 s`);
  out.write(`stopped the fleet of stack ${owner.stack}\n`);
  return 0;
}

/** `winfleet local logs HOST`. */
export async function localLogs(stateDir: string, host: string, lines: number, out: Out): Promise<number> {
  const file = hostPaths(stateDir, host).log;
  if (!existsSync(file))
    throw new AgentError(
      AgentErrorCode.NotFound,
      `no host ${host} in ${stateDir} (hosts: ${(await readdir(join(stateDir, "hosts")).catch(() => [])).join(", ") || "none"})`,
    );
  const text = await readFile(file, "utf8");
  out.write(
    `${text
      .split("\n")
      .slice(-lines - 1)
      .join("\n")}`,
  );
  return 0;
}

/**
 * `winfleet local diagnose HOST [diagnose options]`: the host's `winfleet-agent diagnose`, pointed at its config, log
 * and broker.
 */
export async function localDiagnose(
  stateDir: string,
  host: string,
  args: readonly string[],
  agentEntry: string,
): Promise<number> {
  const paths = hostPaths(stateDir, host);
  if (!existsSync(paths.config))
    throw new AgentError(
      AgentErrorCode.NotFound,
      `no host ${host} in ${stateDir} (hosts: ${(await readdir(join(stateDir, "hosts")).catch(() => [])).join(", ") || "none"})`,
    );
  return runAgent(agentEntry, ["diagnose", "--config", paths.config, "--agent-log", paths.log, ...args]);
}

/**
 * `winfleet local exec HOST -- <prc run arguments>`: a host process through that host's broker, as a container would
 * start one.
 */
export async function localExec(
  stateDir: string,
  host: string,
  args: readonly string[],
  agentEntry: string,
): Promise<number> {
  const paths = hostPaths(stateDir, host);
  if (!existsSync(paths.broker))
    throw new AgentError(
      AgentErrorCode.NotFound,
      `host ${host} is not running (no broker socket at ${paths.broker}); start the fleet with winfleet local up`,
    );
  return runAgent(agentEntry, ["cli", "prc", "run", "--server", paths.broker, ...args]);
}

/** Runs the agent with this terminal as its own; resolves with its exit code. */
function runAgent(agentEntry: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [agentEntry, ...args], { stdio: "inherit" });
    child.on("error", reject);
    child.on("exit", (code) => resolve(code ?? 1));
  });
}
