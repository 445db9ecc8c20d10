/**
 * The modules of `winfleet-agent`'s commands, each loaded only when a command
 * line needs it (see lazy-commands.ts).
 */
/* eslint-disable @typescript-eslint/no-require-imports -- loading on demand is the point of this file */
import type * as AgentServiceCommands from "./agent-service-commands";
import type * as ApproveNodesCommand from "./approve-nodes-command";
import type * as BrokerCommands from "./broker-commands";
import type * as DiagnoseCommand from "./diagnose-command";
import type * as IgnitionCommands from "./ignition-commands";
import type * as InspectCommands from "./inspect-commands";
import type { LazyModule } from "./lazy-commands";
import type * as LifecycleCommands from "./lifecycle-commands";
import type * as SandboxNodeCommands from "./sandbox-node-commands";
import type * as ServeCommand from "./serve-command";
import type * as UpgradeCommands from "./upgrade-commands";

/** Every command module of `winfleet-agent`, in registration (and help) order. */
export const AGENT_COMMANDS: readonly LazyModule[] = [
  {
    names: ["apply", "plan", "uninstall"],
    load: () => (require("./lifecycle-commands") as typeof LifecycleCommands).registerLifecycleCommands,
  },
  {
    names: ["status", "verify"],
    load: () => (require("./inspect-commands") as typeof InspectCommands).registerInspectCommands,
  },
  {
    names: ["diagnose"],
    load: () => (require("./diagnose-command") as typeof DiagnoseCommand).registerDiagnoseCommand,
  },
  { names: ["serve"], load: () => (require("./serve-command") as typeof ServeCommand).registerServeCommand },
  {
    names: ["ignition"],
    load: () => (require("./ignition-commands") as typeof IgnitionCommands).registerIgnitionCommands,
  },
  {
    names: ["broker", "cli"],
    load: () => (require("./broker-commands") as typeof BrokerCommands).registerBrokerCommands,
  },
  {
    names: ["up", "service"],
    load: () => (require("./upgrade-commands") as typeof UpgradeCommands).registerUpgradeCommands,
  },
  {
    names: ["approve-nodes"],
    load: () => (require("./approve-nodes-command") as typeof ApproveNodesCommand).registerApproveNodesCommand,
  },
  {
    names: ["sandbox-node"],
    load: () => (require("./sandbox-node-commands") as typeof SandboxNodeCommands).registerSandboxNodeCommands,
  },
  {
    names: ["ready", "retarget", "service"],
    load: () => (program) =>
      (require("./agent-service-commands") as typeof AgentServiceCommands).registerAgentServiceCommands(
        program,
        program.commands.find((c) => c.name() === "service") ?? program.command("service"),
      ),
  },
];
