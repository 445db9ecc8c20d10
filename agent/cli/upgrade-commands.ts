/** `winfleet-agent up` and `winfleet-agent service render`; what `up` does is agent/service/self-upgrade.ts. */
import { spawn } from "node:child_process";
import { openSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { appInfo } from "../broker/client";
import { endpointPath, loadBrokerConfig } from "../broker";
import { SERVICE_MANAGERS, selfUpgrade } from "../service";
import { defaultBrokerConfig, defaultInstallDir, defaultRunDir, WINDOWS_NSSM } from "../common";
import { renderSystemdUnit, renderWindowsServiceInstall } from "../upgrade";
import { failure, printError } from "./errors";

interface UpOpts {
  bundle: string;
  installDir: string;
  config: string;
  manager: "systemd" | "pidfile" | "windows";
  timeout: number;
  detach: boolean;
  publicKey?: string;
  agentConfig?: string;
  root?: string;
  allowDowngrade?: boolean;
}

/** Registers `up` and `service`. */
export function registerUpgradeCommands(program: Command): void {
  program
    .command("up")
    .description("self-upgrade: install an agent bundle, restart the service, verify it answers, roll back if not")
    .requiredOption(
      "--bundle <path>",
      "the new agent bundle: a directory (package.json and bin/), or the agent-<version>.tgz winfleet release writes",
    )
    .requiredOption("--install-dir <dir>", "the installation (releases/ and the current link)")
    .requiredOption("--config <file>", "the broker config, whose socket the new version must answer on")
    .option(
      "--manager <kind>",
      "how to restart the agent: systemd, windows (the service the bootstrap registers) or pidfile",
      process.platform === "win32" ? "windows" : "systemd",
    )
    .option("--timeout <seconds>", "how long the new version has to answer", (v) => Number(v), 30)
    .option(
      "--detach",
      "run the upgrade in the background (when started through the broker, whose restart would end it)",
      false,
    )
    .option("--public-key <file>", "refuse a bundle not signed with this ed25519 public key (PEM)")
    .option(
      "--agent-config <file>",
      "take the pinned public key (and the root, and allowDowngrade) from this agent config",
    )
    .option(
      "--root <dir>",
      "host path of / whose .winfleet/ records the agent versions accepted (default: the agent config's root, else the system drive's root on Windows, / elsewhere)",
    )
    .option(
      "--allow-downgrade",
      "accept a signed agent older than the one this node accepted before under the same key (logged)",
    )
    .action(async (opts: UpOpts) => {
      try {
        if (opts.detach) {
          const log = openSync(join(opts.installDir, "up.log"), "a");
          const args = process.argv.slice(1).filter((a) => a !== "--detach");
          const child = spawn(process.execPath, args, { detached: true, stdio: ["ignore", log, log] });
          child.unref();
          process.stdout.write(
            `upgrade started in the background (pid ${child.pid}); log: ${join(opts.installDir, "up.log")}\n`,
          );
          return;
        }
        if (!(SERVICE_MANAGERS as readonly string[]).includes(opts.manager)) {
          printError(`--manager ${String(opts.manager)}: expected systemd, windows or pidfile`, 2);
          return;
        }
        const config = await loadBrokerConfig(opts.config);
        const socket = endpointPath(config.listen, process.platform, defaultRunDir());
        const result = await selfUpgrade(
          { ...opts, brokerConfig: opts.config, timeoutSeconds: opts.timeout },
          async () => (await appInfo(socket)).Info?.Version,
        );
        process.stdout.write(`${result.outcome}: ${result.from ?? "(none)"} -> ${result.to}\n`);
      } catch (e) {
        failure(e);
      }
    });

  const service = program.command("service").description("service registration");
  service
    .command("render")
    .description("print the service definition: a systemd unit, or the Windows registration PowerShell")
    .option("--os <os>", "linux or windows", process.platform === "win32" ? "windows" : "linux")
    .option("--install-dir <dir>", "the installation directory", defaultInstallDir())
    .option(
      "--node <path>",
      "Node.js executable",
      process.platform === "win32" ? "C:\\Program Files\\nodejs\\node.exe" : "/usr/bin/node",
    )
    .option("--nssm <path>", "service wrapper on Windows", WINDOWS_NSSM)
    .option("--config <file>", "broker config", defaultBrokerConfig())
    .action((opts: { os: string; installDir: string; node: string; nssm: string; config: string }) => {
      const spec = { installDir: opts.installDir, node: opts.node, args: ["broker", "--config", opts.config] };
      process.stdout.write(
        opts.os === "windows" ? renderWindowsServiceInstall({ ...spec, nssm: opts.nssm }) : renderSystemdUnit(spec),
      );
    });
}
