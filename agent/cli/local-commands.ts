/**
 * `winfleet local up | status | down | logs | exec`: the local fleet, a thin
 * shell over agent/fleet/. `npm start` runs `winfleet local up`.
 */
import { resolve } from "node:path";
import type { Command } from "commander";
import {
  agentEntry,
  DEFAULT_STATE_DIR,
  localByo,
  localDiagnose,
  localDown,
  localExec,
  localLogs,
  localSshHosts,
  localStatus,
  localUp,
} from "../fleet";
import { failure } from "./errors";

const stateDirOption = (c: Command): Command =>
  c.option("--state-dir <dir>", "where the fleet keeps its hosts", DEFAULT_STATE_DIR);

async function exit(work: () => Promise<number>): Promise<void> {
  try {
    process.exitCode = await work();
  } catch (e) {
    failure(e);
  }
}

/** Runs `work` until SIGINT or SIGTERM aborts the signal it is given. */
function untilSignal(work: (stop: AbortSignal) => Promise<number>): Promise<void> {
  return exit(async () => {
    const stop = new AbortController();
    const onSignal = (): void => stop.abort();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    try {
      return await work(stop.signal);
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  });
}

/** Registers `local`. */
export function registerLocalCommands(program: Command): void {
  const local = program
    .command("local")
    .description("the local fleet: sandbox hosts on this machine, each a real winfleet-agent, driven by a stack file");

  stateDirOption(
    local
      .command("up")
      .description(
        "bring the fleet to its stack: start hosts, or roll a changed stack through a running fleet host by host",
      )
      .option("--stack <name>", "stack name (stacks/Pulumi.<name>.yaml) or a stack file path", "local")
      .option("--hosts <n>", "number of hosts (overrides the stack's local pool)", (v) => Number(v))
      .option("--port <port>", "status page port on 127.0.0.1 (0 picks a free one)", (v) => Number(v), 7870)
      .option("--json", "print fleet events as JSON lines", false)
      .option(
        "--cluster",
        "run the production loop: a local control plane (built by npm run setup), the cluster side deployed by the stack's Pulumi program, hosts joined as nodes",
        false,
      ),
  ).action((opts: { stack: string; hosts?: number; port: number; stateDir: string; json: boolean; cluster: boolean }) =>
    exit(async () => {
      const stop = new AbortController();
      const onSignal = (): void => stop.abort();
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
      try {
        return await localUp(
          { ...opts, stateDir: resolve(opts.stateDir), agentEntry: agentEntry(), stop: stop.signal },
          process.stdout,
          process.stderr,
        );
      } finally {
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
      }
    }),
  );

  stateDirOption(
    local
      .command("status")
      .description("each host's state, template, components, step and last error")
      .option("--json", "print JSON", false),
  ).action((opts: { stateDir: string; json: boolean }) =>
    exit(() => localStatus(resolve(opts.stateDir), opts.json, process.stdout)),
  );

  stateDirOption(local.command("down").description("stop the running fleet and every agent in it")).action(
    (opts: { stateDir: string }) => exit(() => localDown(resolve(opts.stateDir), process.stdout)),
  );

  stateDirOption(
    local
      .command("logs")
      .description("a host's agent log")
      .argument("<host>", "host name, e.g. local-1")
      .option("-n, --lines <n>", "lines from the end", (v) => Number(v), 200),
  ).action((host: string, opts: { stateDir: string; lines: number }) =>
    exit(() => localLogs(resolve(opts.stateDir), host, opts.lines, process.stdout)),
  );

  stateDirOption(
    local
      .command("exec")
      .description(
        "start a host process through a host's broker, as a container would: winfleet local exec local-1 -- --path /usr/bin/uname --args -a",
      )
      .argument("<host>", "host name")
      .argument("[args...]", "winfleet-agent cli prc run arguments, after --")
      .allowUnknownOption(),
  ).action((host: string, args: string[], opts: { stateDir: string }) =>
    exit(() => localExec(resolve(opts.stateDir), host, args, agentEntry())),
  );

  stateDirOption(
    local
      .command("diagnose")
      .description(
        "a host's diagnostics archive (winfleet-agent diagnose on that host), or with --summary what is wrong first",
      )
      .argument("<host>", "host name, e.g. local-1")
      .option("--out <file>", "the archive to write")
      .option("--since <duration>", "how far back logs go, e.g. 30m, 2h, 7d")
      .option("--timeout <duration>", "the most one source may take")
      .option("--summary", "print what is wrong, then what is fine; exit 1 when something is wrong"),
  ).action(
    (host: string, opts: { stateDir: string; out?: string; since?: string; timeout?: string; summary?: boolean }) => {
      const args = [
        ...(opts.out ? ["--out", resolve(opts.out)] : []),
        ...(opts.since ? ["--since", opts.since] : []),
        ...(opts.timeout ? ["--timeout", opts.timeout] : []),
        ...(opts.summary ? ["--summary"] : []),
      ];
      return exit(() => localDiagnose(resolve(opts.stateDir), host, args, agentEntry()));
    },
  );

  stateDirOption(
    local
      .command("byo")
      .description(
        "try bring-your-own hosts in one command: a local control plane, sandbox hosts reached over SSH, and the stack adopting them with pulumi up (as root; Ctrl-C destroys it all)",
      )
      .option("--hosts <n>", "number of hosts", (v) => Number(v), 3),
  ).action((opts: { stateDir: string; hosts: number }) =>
    untilSignal((stop) => localByo({ stateDir: resolve(opts.stateDir), hosts: opts.hosts, stop }, process.stdout)),
  );

  stateDirOption(
    local
      .command("ssh-hosts")
      .description(
        "start N sandbox hosts reached over SSH (each its own address, sshd, user and host key; as root) until Ctrl-C",
      )
      .option("--hosts <n>", "number of hosts", (v) => Number(v), 3),
  ).action((opts: { stateDir: string; hosts: number }) =>
    untilSignal((stop) => localSshHosts({ stateDir: resolve(opts.stateDir), hosts: opts.hosts, stop }, process.stdout)),
  );
}
