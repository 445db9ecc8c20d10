/**
 * The broker: the wins-compatible gRPC server on one socket (a named pipe on
 * Windows) and the port proxy on another. Starting it finds the processes an
 * earlier broker left (orphans, listed and ended through AgentService);
 * stopping it ends every host process it started.
 */
import { createHash } from "node:crypto";
import { chmod, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { dirname } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { AgentError, AgentErrorCode, type ConfinedDir, errorMessage, type Logger } from "../common";
import { type AgentStatus, agentService } from "./agent-service";
import { type BrokerConfig, endpointPath, parseBrokerConfig } from "./config";
import { EnvPolicy, baseEnvironment } from "./environment";
import { AgentService } from "./generated/winfleet/agent_pb";
import { type Firewall, noFirewall } from "./firewall";
import { windowsFirewall } from "./firewall.win32";
import { type PipeAclResult, securePipe } from "./pipe-acl.win32";
import { TunnelService } from "./generated/winfleet/proxy_pb";
import { ApplicationService } from "./generated/wins/application_pb";
import { HnsService } from "./generated/wins/hns_pb";
import { HostService } from "./generated/wins/host_pb";
import { NetworkService } from "./generated/wins/network_pb";
import { ProcessService } from "./generated/wins/process_pb";
import { RouteService } from "./generated/wins/route_pb";
import { grpcService } from "./grpc-adapter";
import { type ProcessHost, linuxProcessHost } from "./process-host";
import { windowsProcessHost } from "./process-host.win32";
import { ProcessPool } from "./process-pool";
import { ensurePrivateDir, withPrivateUmask } from "./private-dir";
import { tunnelService } from "./proxy-service";
import { type ProxySocket, listenProxySocket } from "./proxy-socket";
import { applicationService, hostService, processService, unavailableService } from "./services";
import { ProcessPathPolicy } from "./whitelist";

/** Everything the broker needs, passed in. */
export interface BrokerOptions {
  readonly config: BrokerConfig;
  /** Where relative socket names live on Linux. */
  readonly runDir: string;
  /** Where process records live (so a later broker finds what this one started). */
  /** Where process records are kept: a path, or the agent's state directory's `broker`, reached by its walk. */
  readonly stateDir: string | ConfinedDir;
  /** The file whose SHA1 `ApplicationService.Info` reports. */
  readonly entryFile: string;
  readonly log: Logger;
  readonly host?: ProcessHost;
  readonly firewall?: Firewall;
  readonly platform?: NodeJS.Platform;
  /** The config file, which `ReloadConfig` re-reads. */
  readonly configFile?: string;
  /** The lifecycle engine's status, for `AgentService.Status` (absent when the broker runs alone). */
  readonly agentStatus?: () => Promise<AgentStatus>;
  /** Makes a listening pipe private (Windows); the default sets wins's DACL through PowerShell. */
  readonly securePipe?: (pipe: string) => Promise<PipeAclResult>;
}

const WINDOWS_ONLY = "is only available on Windows hosts";

async function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/**
 * Makes `path` ready to listen on: a private directory (see private-dir.ts),
 * no socket file left by a broker that died, and no broker answering there. On
 * Windows a pipe server created first refuses a second one (libuv asks for the
 * first instance), but only with an unclear error, and not everywhere (Wine
 * ignores the request): a broker answering on the pipe is refused by name.
 */
async function prepare(path: string, platform: NodeJS.Platform, log: Logger): Promise<void> {
  if (platform !== "win32") {
    const dir = dirname(path);
    if ((await ensurePrivateDir(dir, process.getuid?.() ?? 0)) === "repaired") {
      log.warn("other users could write to the socket directory; removed their write access", { dir });
    }
  }
  if (await listening(path))
    throw new AgentError(AgentErrorCode.AlreadyExists, `another broker is already listening on ${path}`);
  if (platform !== "win32") await rm(path, { force: true });
}

/** Where a listener goes and who may reach it: the platform, the log, and how a pipe is made private. */
interface Listening {
  readonly platform: NodeJS.Platform;
  readonly log: Logger;
  readonly securePipe: (pipe: string) => Promise<PipeAclResult>;
}

async function listenOn(path: string, on: Listening, listen: () => Promise<void>): Promise<void> {
  const { platform, log } = on;
  await prepare(path, platform, log);
  const bound = platform === "win32" ? listen() : withPrivateUmask(listen);
  await bound.catch((e: unknown) => {
    throw new AgentError(AgentErrorCode.ApplyFailed, `cannot listen on ${path}: ${errorMessage(e)}`);
  });
  if (platform !== "win32") {
    await chmod(path, 0o600);
    return;
  }
  // Node creates the pipe with the default descriptor; wins's DACL admits only Administrators and SYSTEM.
  const acl = await on.securePipe(path);
  if ("unconfirmed" in acl)
    log.error("cannot confirm the pipe's DACL; it keeps the default one", { pipe: path, why: acl.unconfirmed });
}

async function bind(server: grpc.Server, path: string, on: Listening): Promise<void> {
  await listenOn(
    path,
    on,
    () =>
      new Promise<void>((resolve, reject) => {
        server.bindAsync(`unix:${path}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve()));
      }),
  );
}

/** A running broker. */
export class Broker {
  private constructor(
    private readonly grpcServer: grpc.Server,
    private readonly proxyServer: grpc.Server,
    private readonly proxySocket: ProxySocket,
    private readonly pool: ProcessPool,
    /** The gRPC socket or pipe. */
    readonly listenPath: string,
    /** The proxy socket or pipe. */
    readonly proxyPath: string,
    private readonly log: Logger,
  ) {}

  /** Starts both servers; rejects (having bound nothing it keeps) if either cannot listen. */
  static async start(options: BrokerOptions): Promise<Broker> {
    const platform = options.platform ?? process.platform;
    const { config, log } = options;
    const windows = platform === "win32";
    const pool = new ProcessPool(
      options.stateDir,
      options.host ?? (windows ? windowsProcessHost : linuxProcessHost),
      options.firewall ?? (windows ? windowsFirewall : noFirewall),
      log,
      baseEnvironment(process.env, platform),
    );
    const orphans = await pool.adoptRecords();
    if (orphans.length > 0)
      log.warn("processes left by an earlier broker are still running (prc ls; prc kill --orphans ends them)", {
        count: orphans.length,
        names: orphans.join(","),
      });
    if (config.whiteList.allowAll) log.warn("allowAll is set: any host binary may be started");
    else if (config.whiteList.processPaths.length === 0)
      log.warn("the process whitelist is empty: prc run will refuse every path");

    // The whitelist and proxy ports in force; ReloadConfig replaces them as one.
    let live = {
      config,
      policy: new ProcessPathPolicy(config.whiteList.processPaths, config.whiteList.allowAll, platform),
      env: new EnvPolicy(config.whiteList.envs, platform, config.whiteList.processEnvs),
      sha256: "",
    };
    if (options.configFile)
      live.sha256 = createHash("sha256")
        .update(await readFile(options.configFile))
        .digest("hex");
    const policy = { check: (path: string) => live.policy.check(path) };
    const reload = async (
      path: string | undefined,
    ): Promise<{ processPaths: number; proxyPorts: number; sha256: string }> => {
      const file = path ?? options.configFile;
      if (!file)
        throw new AgentError(
          AgentErrorCode.InvalidInput,
          "this broker was started from an inline config: name the file to read",
        );
      const text = await readFile(file, "utf8").catch((e: unknown) => {
        throw new AgentError(AgentErrorCode.InvalidInput, `cannot read ${file}: ${errorMessage(e)}`);
      });
      const next = parseBrokerConfig(text, file);
      if (next.listen !== live.config.listen || next.proxy !== live.config.proxy) {
        throw new AgentError(
          AgentErrorCode.InvalidInput,
          `${file} changes listen or proxy, which only a restart applies; nothing was changed`,
        );
      }
      live = {
        config: next,
        policy: new ProcessPathPolicy(next.whiteList.processPaths, next.whiteList.allowAll, platform),
        env: new EnvPolicy(next.whiteList.envs, platform, next.whiteList.processEnvs),
        sha256: createHash("sha256").update(text).digest("hex"),
      };
      log.info("broker config reloaded", {
        file,
        processPaths: next.whiteList.processPaths.length,
        proxyPorts: next.whiteList.proxyPorts.join(","),
      });
      return {
        processPaths: next.whiteList.processPaths.length,
        proxyPorts: next.whiteList.proxyPorts.length,
        sha256: live.sha256,
      };
    };
    const server = new grpc.Server();
    server.addService(grpcService(ApplicationService), applicationService(options.entryFile));
    server.addService(grpcService(HostService), hostService());
    server.addService(
      grpcService(ProcessService),
      processService(pool, policy, () => live.env, log),
    );
    server.addService(grpcService(NetworkService), unavailableService(["Get"], `NetworkService ${WINDOWS_ONLY}`));
    server.addService(grpcService(HnsService), unavailableService(["GetNetwork"], `HnsService ${WINDOWS_ONLY}`));
    server.addService(grpcService(RouteService), unavailableService(["Add"], `RouteService ${WINDOWS_ONLY}`));
    server.addService(
      grpcService(AgentService),
      agentService({
        ...(options.agentStatus ? { status: options.agentStatus } : {}),
        reload,
        configSha256: () => live.sha256,
        processes: () => pool.list(),
        kill: (names, orphans) => pool.kill(names, orphans),
      }),
    );
    const proxy = new grpc.Server();
    proxy.addService(
      grpcService(TunnelService),
      tunnelService(() => live.config.whiteList.proxyPorts, log),
    );

    const listenPath = endpointPath(config.listen, platform, options.runDir);
    const proxyPath = endpointPath(config.proxy, platform, options.runDir);
    const on: Listening = { platform, log, securePipe: options.securePipe ?? securePipe };
    let proxySocket: ProxySocket | undefined;
    try {
      await bind(server, listenPath, on);
      // The proxy socket serves gRPC (TunnelService) and the stream tunnel on one listener.
      const injector = proxy.createConnectionInjector(grpc.ServerCredentials.createInsecure());
      await listenOn(proxyPath, on, async () => {
        proxySocket = await listenProxySocket(proxyPath, {
          ports: () => live.config.whiteList.proxyPorts,
          injectGrpc: (c) => injector.injectConnection(c),
          log,
        });
      });
    } catch (e) {
      // Nothing stays bound: a pipe that could not be made private is closed again.
      server.forceShutdown();
      const bound: ProxySocket | undefined = proxySocket;
      await bound?.close();
      throw e;
    }
    if (!proxySocket) throw new AgentError(AgentErrorCode.ApplyFailed, `cannot listen on ${proxyPath}`);
    log.info("broker listening", {
      listen: listenPath,
      proxy: proxyPath,
      proxyPorts: config.whiteList.proxyPorts.join(","),
    });
    return new Broker(server, proxy, proxySocket, pool, listenPath, proxyPath, log);
  }

  /** Names of the host processes running now. */
  processes(): string[] {
    return this.pool.names();
  }

  /** Stops accepting calls, ends every host process, and closes both sockets. */
  async stop(): Promise<void> {
    await this.pool.shutdown();
    for (const s of [this.grpcServer, this.proxyServer]) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          s.forceShutdown();
          resolve();
        }, 2000);
        s.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await this.proxySocket.close();
    this.log.info("broker stopped");
  }
}
