/**
 * `winfleet-agent broker` (the server alone) and `winfleet-agent cli …` (the
 * wins-compatible client a container runs). The client exits with the host
 * process's exit code.
 */
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { errorMessage, createLogger, defaultRunDir } from "../common";
import {
  DEFAULT_LISTEN,
  DEFAULT_PROXY,
  endpointPath,
  loadBrokerConfig,
  parseListValue,
  parsePortSpec,
} from "../broker";
import type * as Client from "../broker/client";
import type * as ProxyClient from "../broker/proxy-client";
import type * as Server from "../broker/server";
import { AGENT_VERSION } from "../version";
import { failure, printError } from "./errors";

/* eslint-disable @typescript-eslint/no-require-imports -- each command loads what it uses, so the idle broker holds no client and a client no server */
const client = (): typeof Client => require("../broker/client") as typeof Client;
const proxyClient = (): typeof ProxyClient => require("../broker/proxy-client") as typeof ProxyClient;
const brokerServer = (): typeof Server => require("../broker/server") as typeof Server;
/* eslint-enable @typescript-eslint/no-require-imports */

const socketOf = (name: string): string => endpointPath(name, process.platform, defaultRunDir());

/** JSON with empty fields omitted, as wins printed Go structs. */
function winsJson(value: unknown): string {
  return JSON.stringify(value, (k, v: unknown) =>
    k === "$typeName" || v === "" || (Array.isArray(v) && v.length === 0) ? undefined : v,
  );
}

/** An action that asks the broker for a value and prints it as wins did, or the error and exit 1. */
function printJson(query: (socket: string) => Promise<unknown>): (opts: { server: string }) => Promise<void> {
  return async (opts) => {
    try {
      process.stdout.write(winsJson(await query(socketOf(opts.server))));
    } catch (e) {
      printError(errorMessage(e));
    }
  };
}

/** A failed call to the broker; one that nothing answers says where it looked and what still works without it. */
function brokerCallError(e: unknown, socket: string): string {
  if ((e as { code?: unknown }).code === 14) {
    return `no broker answers on ${socket} (${errorMessage(e).replace(/\s*Resolution note:\s*$/, "")}); without a broker, winfleet-agent diagnose --summary lists what it left from its records`;
  }
  return errorMessage(e);
}

/** One managed process, as `prc ls` prints it. */
export interface ProcessRow {
  readonly name: string;
  readonly pid: number;
  readonly startedAt: string;
  readonly path: string;
  readonly state: string;
  readonly exitCode?: number;
  readonly brokerPid: number;
}

/** The managed processes as a table, orphans marked in capitals so they stand out. */
export function formatProcesses(rows: readonly ProcessRow[]): string {
  if (rows.length === 0) return "no managed processes\n";
  const state = (r: ProcessRow): string =>
    r.state === "orphaned" ? "ORPHANED" : r.state === "exited" ? `exited ${String(r.exitCode ?? "")}`.trim() : r.state;
  const cols = [
    ["NAME", "PID", "STATE", "STARTED", "PATH"],
    ...rows.map((r) => [r.name, String(r.pid), state(r), r.startedAt || "-", r.path || "-"]),
  ];
  const widths = cols[0]?.map((_, i) => Math.max(...cols.map((c) => (c[i] ?? "").length))) ?? [];
  return `${cols.map((c) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i] ?? 0))).join("  ")).join("\n")}\n`;
}

/** Registers `broker` and `cli`. */
export function registerBrokerCommands(program: Command): void {
  program
    .command("broker")
    .description("serve the wins-compatible host-process API and the port proxy")
    .requiredOption(
      "--config <file>",
      "wins-style config (YAML or JSON): listen, proxy, white_list.processPaths/proxyPorts/envs, allowAll (docs/security.md)",
    )
    .option(
      "--state-dir <dir>",
      "where process records live (default: stateDir from the config, else <run dir>/broker-state)",
    )
    .action(async (opts: { config: string; stateDir?: string }) => {
      try {
        const config = await loadBrokerConfig(opts.config);
        const log = createLogger("broker", { debug: config.debug });
        const runDir = defaultRunDir();
        const broker = await brokerServer().Broker.start({
          config,
          runDir,
          log,
          stateDir: resolve(opts.stateDir ?? config.stateDir ?? join(runDir, "broker-state")),
          entryFile: process.argv[1] ?? __filename,
          configFile: resolve(opts.config),
        });
        await new Promise<void>((done) => {
          const stop = (): void => {
            process.off("SIGINT", stop);
            process.off("SIGTERM", stop);
            broker.stop().then(done, done);
          };
          process.on("SIGINT", stop);
          process.on("SIGTERM", stop);
        });
      } catch (e) {
        failure(e);
      }
    });

  const cli = program.command("cli").description("the client side: what a container runs against the host's broker");
  const server = (c: Command): Command =>
    c.option("--server <name>", "broker socket: a name (pipe on Windows) or an absolute socket path", DEFAULT_LISTEN);

  const prc = cli.command("prc").alias("process").description("host processes");
  server(
    prc.command("run").description("run a host process for as long as this client lives; exits with its exit code"),
  )
    .requiredOption("--path <path>", "the binary, at the same absolute path on host and container")
    .option("--args <list>", "arguments, space-separated; quotes group (and are kept)", "")
    .option("--exposes <list>", 'ports to open in the host firewall, e.g. "TCP:443 UDP:4789-4790"', "")
    .option("--envs <list>", 'environment, e.g. "A=1 B=2": only names the broker\'s whiteList.envs allows', "")
    .option("--dir <dir>", "working directory (default: the binary's directory)", "")
    .action(
      async (opts: { path: string; args: string; exposes: string; envs: string; dir: string; server: string }) => {
        try {
          const exposes = parseListValue(opts.exposes).flatMap((item) => {
            const spec = parsePortSpec(item);
            return spec.ports.map((Port) => ({ Port, Protocol: spec.protocol === "UDP" ? 1 : 0 }));
          });
          const run = await client().runProcess(
            socketOf(opts.server),
            {
              Path: opts.path,
              Args: parseListValue(opts.args),
              Envs: parseListValue(opts.envs),
              Dir: opts.dir,
              Exposes: exposes,
            },
            { stdout: process.stdout, stderr: process.stderr },
          );
          const stop = (): void => run.stop();
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
          process.exitCode = await run.done;
        } catch (e) {
          printError(errorMessage(e));
        }
      },
    );

  server(
    prc
      .command("ls")
      .alias("list")
      .description("the host processes the broker manages; ORPHANED ones were left by a broker that died"),
  )
    .option("--json", "as JSON")
    .action(async (opts: { server: string; json?: boolean }) => {
      try {
        const { Processes } = await client().listProcesses(socketOf(opts.server));
        const rows = Processes.map((p) => ({
          name: p.Name,
          pid: p.Pid,
          startedAt: p.StartedAt,
          path: p.Path,
          state: p.State,
          ...(p.State === "exited" ? { exitCode: p.ExitCode } : {}),
          brokerPid: p.BrokerPid,
        }));
        process.stdout.write(opts.json ? `${JSON.stringify(rows, null, 2)}\n` : formatProcesses(rows));
      } catch (e) {
        printError(brokerCallError(e, socketOf(opts.server)));
      }
    });
  server(
    prc
      .command("kill")
      .description("end managed processes by name, or every orphan, with their trees and firewall rules"),
  )
    .argument("[names...]", "process names, as prc ls shows them")
    .option("--orphans", "every process left by a broker that died")
    .action(async (names: string[], opts: { server: string; orphans?: boolean }) => {
      if (names.length === 0 && !opts.orphans) {
        printError("name the processes to kill, or give --orphans", 2);
        return;
      }
      try {
        const { Killed } = await client().killProcesses(socketOf(opts.server), names, opts.orphans === true);
        process.stdout.write(Killed.length > 0 ? `killed ${Killed.join(", ")}\n` : "nothing to kill\n");
      } catch (e) {
        printError(brokerCallError(e, socketOf(opts.server)));
      }
    });

  const app = cli.command("app").alias("application").description("the broker application");
  server(app.command("info").description("client and server version and checksum, as JSON")).action(
    printJson(async (socket) => {
      const info = await client().appInfo(socket);
      const self = {
        Checksum: await client().sha1File(process.argv[1] ?? __filename),
        Version: AGENT_VERSION,
        Commit: process.env.WINFLEET_COMMIT ?? "",
      };
      return { Client: self, Server: info.Info };
    }),
  );

  const hst = cli.command("hst").alias("host").description("the host");
  server(hst.command("get-version").description("the host OS version, as JSON")).action(
    printJson(async (socket) => (await client().hostVersion(socket)).Data),
  );

  cli
    .command("proxy")
    .description("listen on ports inside the pod and tunnel each connection to the same port on the host's localhost")
    .requiredOption("--publish <list>", 'ports to publish, e.g. "TCP:9796 TCP:80-81" (TCP only)')
    .option("--proxy <name>", "proxy socket: a name (pipe on Windows) or an absolute socket path", DEFAULT_PROXY)
    .option("--bind <address>", "address to listen on inside the pod", "0.0.0.0")
    .action(async (opts: { publish: string; proxy: string; bind: string }) => {
      try {
        const ports = parseListValue(opts.publish).flatMap((i) => parsePortSpec(i, ["TCP"]).ports);
        const socket = socketOf(opts.proxy);
        const allowed = new Set(await client().proxyPorts(socket));
        const refused = ports.filter((p) => !allowed.has(p));
        if (refused.length > 0) {
          throw new Error(
            `the host does not allow port(s) ${refused.join(", ")} (proxyPorts: ${[...allowed].join(", ") || "none"})`,
          );
        }
        const published = await Promise.all(
          ports.map((port) => proxyClient().publish(socket, port, opts.bind, (m) => process.stderr.write(`${m}\n`))),
        );
        process.stderr.write(`proxying ${ports.map((p) => `${opts.bind}:${p}`).join(", ")} to the host\n`);
        await new Promise<void>((done) => {
          const stop = (): void => {
            Promise.all(published.map((p) => p.close())).then(
              () => done(),
              () => done(),
            );
          };
          process.once("SIGINT", stop);
          process.once("SIGTERM", stop);
        });
      } catch (e) {
        printError(errorMessage(e));
      }
    });
}
