/**
 * `serve`: the agent as a service. It reads one agent config, resumes or
 * applies on start, re-verifies the applied files on a timer (re-applying the
 * affected components when `autoCorrect` is on), re-applies when the config
 * changes, removes the join token from the config once the node has its own
 * certificate (join-token.ts), and serves the broker in the same process. A reboot the content
 * asks for ends the process with 3010 (off Windows the supervisor starting it
 * again is the reboot); SIGTERM stops after the running command and journals
 * where it was. Events go to the observer: JSON lines, the Kubernetes reporter.
 */
import { existsSync, unwatchFile, watchFile } from "node:fs";
import { hostname } from "node:os";
import { type AgentStatus, loadBrokerConfig, parseBrokerConfig } from "../broker";
import { Broker } from "../broker/server";
import { errorMessage, type Logger } from "../common";
import {
  apply,
  repair,
  type EngineDeps,
  type LifecycleEvent,
  type LifecycleObserver,
  type RunOutcome,
  stateOf,
  readJournal,
  statusOf,
  checkServices,
  verifyHost,
} from "../lifecycle";
import { AGENT_VERSION } from "../version";
import { type AgentConfig, loadAgentConfig } from "./config";
import { forgetJoinToken } from "./join-token";

/** How `serve` ended. */
export type ServeExit = { readonly code: number; readonly reason: string };

/** What `serve` needs, passed in. */
export interface ServeOptions {
  readonly configFile: string;
  /**
   * Builds the engine's dependencies for a config (shells, reboot executor, root…); `supersede` is aborted when the
   * config changes, which stops a drain that waits (the new target may need none).
   */
  readonly engine: (
    config: AgentConfig,
    observer: LifecycleObserver,
    signal: AbortSignal,
    supersede: AbortSignal,
  ) => EngineDeps;
  readonly observer: LifecycleObserver;
  readonly log: Logger;
  /** Where relative broker socket names live. */
  readonly runDir: string;
  /** Resolves when the service must stop (SIGTERM). */
  readonly stopSignal: AbortSignal;
  /** How often the config file is checked for changes. @default 2000 */
  readonly configPollMs?: number;
  /** Wait after a failed apply before trying again. @default 30000, doubling to 15 min */
  readonly retryMs?: number;
}

/** Runs the service until it is stopped or a reboot ends it. */
export async function serve(options: ServeOptions): Promise<ServeExit> {
  const { log } = options;
  let config = await loadAgentConfig(options.configFile);
  const abort = new AbortController();
  options.stopSignal.addEventListener("abort", () => abort.abort(), { once: true });
  let supersede = new AbortController();
  let deps = options.engine(config, options.observer, abort.signal, supersede.signal);
  const agentStatus = async (): Promise<AgentStatus> => statusFor(config, deps.root);
  // A broker config file may only appear once content (the winfleet-broker component) laid it down.
  let broker: Broker | undefined;
  let waitingForBroker = false;
  const ensureBroker = async (): Promise<void> => {
    if (broker || config.broker === undefined) return;
    if (typeof config.broker === "string" && !existsSync(config.broker)) {
      if (!waitingForBroker) log.info("the broker starts once its config exists", { file: config.broker });
      waitingForBroker = true;
      return;
    }
    try {
      broker = await startBroker(config, deps.root, options, agentStatus);
    } catch (e) {
      log.error("cannot start the broker", { error: errorMessage(e) });
    }
  };
  await ensureBroker();

  let wake: (() => void) | undefined;
  const nudge = (): void => wake?.();
  let configChanged = false;
  const onConfig = (): void => {
    configChanged = true;
    supersede.abort();
    nudge();
  };
  watchFile(options.configFile, { interval: options.configPollMs ?? 2000 }, onConfig);

  // The join token leaves the node once the node's kubeconfig holds its own certificate: checked after each apply
  // and whenever that kubeconfig changes (the kubelet writes it when TLS bootstrap ends), one check at a time.
  let tokenCheck: Promise<void> = Promise.resolve();
  const dropJoinToken = (): Promise<void> =>
    (tokenCheck = tokenCheck.then(async () => {
      try {
        const removed = await forgetJoinToken(options.configFile, config.kubeconfig);
        if (removed.length === 0) return;
        log.info("the node has its own certificate; removed the join token from the agent config", {
          secrets: removed.join(","),
        });
        // What commands get from now on: the config in memory without the token, without a re-apply for this
        // change. Not the file read again: a target written since (a retarget) would become the current config
        // unapplied, and the loop would find nothing changed.
        const secrets = Object.fromEntries(Object.entries(config.secrets).filter(([k]) => !removed.includes(k)));
        config = { ...config, secrets };
        deps = options.engine(config, options.observer, abort.signal, supersede.signal);
      } catch (e) {
        log.error("cannot remove the join token from the agent config", { error: errorMessage(e) });
      }
    }));
  let watchedKubeconfig: string | undefined;
  const onKubeconfig = (): void => void dropJoinToken();
  const watchKubeconfig = (): void => {
    if (watchedKubeconfig === config.kubeconfig) return;
    if (watchedKubeconfig !== undefined) unwatchFile(watchedKubeconfig, onKubeconfig);
    watchedKubeconfig = config.kubeconfig;
    if (watchedKubeconfig !== undefined)
      watchFile(watchedKubeconfig, { interval: options.configPollMs ?? 2000 }, onKubeconfig);
  };
  watchKubeconfig();
  options.stopSignal.addEventListener("abort", nudge, { once: true });
  const onHup = (): void => onConfig();
  process.on("SIGHUP", onHup);

  const emitState = async (): Promise<void> => {
    const s = statusOf(await readJournal(deps.root));
    options.observer.event({
      type: "state",
      at: new Date().toISOString(),
      state: s.state,
      template: s.template,
      components: s.components,
      agentVersion: AGENT_VERSION,
      contentDigest: s.contentDigest,
    });
  };
  // A wait that a stop or a config change cuts short, including one that came before it started.
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      if (options.stopSignal.aborted || configChanged) {
        resolve();
        return;
      }
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });

  let retry = options.retryMs ?? 30_000;
  let needApply = true;
  try {
    while (!options.stopSignal.aborted) {
      if (configChanged) {
        configChanged = false;
        if (supersede.signal.aborted) {
          supersede = new AbortController();
          deps = options.engine(config, options.observer, abort.signal, supersede.signal);
        }
        try {
          const next = await loadAgentConfig(options.configFile);
          if (JSON.stringify(next) !== JSON.stringify(config)) {
            log.info("agent config changed; applying it", { file: options.configFile });
            config = next;
            deps = options.engine(config, options.observer, abort.signal, supersede.signal);
            watchKubeconfig();
            needApply = true;
            retry = options.retryMs ?? 30_000;
          }
        } catch (e) {
          log.error("the changed agent config is invalid; keeping the one in use", { error: errorMessage(e) });
        }
      }
      if (needApply) {
        const outcome = await applyOnce(config, deps, log);
        await dropJoinToken();
        await emitState();
        await ensureBroker();
        if (outcome?.kind === "reboot") return { code: 3010, reason: `reboot required: ${outcome.reasons.join("; ")}` };
        // Interrupted by a stop, or a drain cut short by a new config, which the next pass applies.
        if (outcome?.kind === "interrupted") {
          if (options.stopSignal.aborted) break;
          continue;
        }
        needApply = outcome?.kind !== "converged";
        if (needApply) {
          await sleep(retry);
          retry = Math.min(retry * 2, 15 * 60_000);
          continue;
        }
        retry = options.retryMs ?? 30_000;
      }
      const interval = config.verifyIntervalSeconds * 1000;
      if (interval === 0) {
        await sleep(2 ** 31 - 1);
        continue;
      }
      await sleep(interval);
      if (options.stopSignal.aborted || configChanged) continue;
      const corrected = await verifyOnce(config, deps, options.observer, log);
      if (corrected?.kind === "reboot") return { code: 3010, reason: "reboot required" };
      if (corrected) await emitState();
    }
    return { code: 0, reason: "stopped" };
  } finally {
    unwatchFile(options.configFile, onConfig);
    if (watchedKubeconfig !== undefined) unwatchFile(watchedKubeconfig, onKubeconfig);
    await tokenCheck;
    process.off("SIGHUP", onHup);
    await broker?.stop();
  }
}

async function applyOnce(config: AgentConfig, deps: EngineDeps, log: Logger): Promise<RunOutcome | undefined> {
  try {
    const outcome = await apply(
      { content: config.content, template: config.template, templateVersion: config.templateVersion },
      deps,
    );
    if (outcome.kind === "failed") {
      const f = outcome.journal.run?.failure;
      log.error(
        "apply failed",
        f ? { component: f.component, phase: f.phase, command: f.command, exitCode: f.exitCode ?? undefined } : {},
      );
    }
    return outcome;
  } catch (e) {
    log.error("cannot apply", { error: errorMessage(e) });
    return undefined;
  }
}

/**
 * Verifies the applied files and the node services; reports drift and, with autoCorrect, lays the affected
 * components' files down again; reports a node service down and, with restoreServices, starts it again.
 */
async function verifyOnce(
  config: AgentConfig,
  deps: EngineDeps,
  observer: LifecycleObserver,
  log: Logger,
): Promise<RunOutcome | undefined> {
  await verifyServices(config, deps, observer, log);
  try {
    const report = await verifyHost(deps.root, deps.mapper);
    if (report.items.length === 0) return undefined;
    const at = new Date().toISOString();
    observer.event({ type: "drift-found", at, items: report.items });
    log.warn("drift found", {
      paths: report.items.length,
      components: [...new Set(report.items.map((i) => i.component))].join(","),
    });
    if (!config.autoCorrect) return undefined;
    const components = [...new Set(report.items.map((i) => i.component))];
    const outcome = await repair(components, deps);
    if (outcome?.kind === "converged")
      observer.event({ type: "drift-corrected", at: new Date().toISOString(), components } satisfies LifecycleEvent);
    return outcome;
  } catch (e) {
    log.error("cannot verify", { error: errorMessage(e) });
    return undefined;
  }
}

/** The node services' part of the re-verify: what is down, reported, and brought back unless turned off. */
export async function verifyServices(
  config: Pick<AgentConfig, "restoreServices">,
  deps: Pick<EngineDeps, "root" | "services">,
  observer: LifecycleObserver,
  log: Logger,
): Promise<void> {
  if (!deps.services) return;
  try {
    const check = await checkServices(deps.root, deps.services, { restore: config.restoreServices });
    if (check.issues.length === 0) return;
    observer.event({ type: "service-down", at: new Date().toISOString(), items: check.issues });
    log.warn("node services down", { services: check.issues.map((i) => `${i.service} ${i.problem}`).join(",") });
    if (check.restored.length > 0 || check.failed.length > 0)
      observer.event({
        type: "service-restored",
        at: new Date().toISOString(),
        services: check.restored,
        failed: check.failed,
      });
  } catch (e) {
    log.error("cannot check the node services", { error: errorMessage(e) });
  }
}

async function startBroker(
  config: AgentConfig,
  root: string,
  options: ServeOptions,
  agentStatus: () => Promise<AgentStatus>,
): Promise<Broker> {
  const brokerConfig =
    typeof config.broker === "string"
      ? await loadBrokerConfig(config.broker)
      : parseBrokerConfig(JSON.stringify(config.broker), `${config.file}: broker`);
  return Broker.start({
    config: brokerConfig,
    runDir: options.runDir,
    stateDir: brokerConfig.stateDir ?? stateOf(root).sub("broker"),
    entryFile: process.argv[1] ?? __filename,
    log: options.log,
    ...(typeof config.broker === "string" ? { configFile: config.broker } : {}),
    agentStatus,
  });
}

/** The agent's status as `AgentService.Status` reports it. */
export async function statusFor(config: AgentConfig, root: string): Promise<AgentStatus> {
  const s = statusOf(await readJournal(root));
  const f = s.failure;
  return {
    AgentVersion: AGENT_VERSION,
    State: s.state,
    Template: s.template?.name ?? "",
    TemplateVersion: s.template?.version ?? "",
    Components: s.components.map((c) => ({ Name: c.name, Version: c.version, State: c.state })),
    Failure: f
      ? `${f.component} ${f.phase}: ${f.command} ${f.timedOut ? "timed out" : `exited ${String(f.exitCode)}`}`
      : "",
    NodeName: config.nodeName ?? hostname(),
    ContentDigest: s.contentDigest ?? "",
    BrokerConfigSha256: "",
  };
}
