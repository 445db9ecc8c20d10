/**
 * `winfleet local …`: the local fleet (what `npm start` runs). It needs
 * PowerShell 7 to run the sandbox components; until the lifecycle engine lands
 * it says plainly what is missing instead of pretending to run.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";

/** The pwsh executable, if one is installed. */
export function findPwsh(): string | undefined {
  const onPath = spawnSync("sh", ["-c", "command -v pwsh"], { encoding: "utf8" }).stdout.trim();
  if (onPath) return onPath;
  const tool = join(homedir(), ".dotnet", "tools", "pwsh");
  return existsSync(tool) ? tool : undefined;
}

/** Registers `local`. */
export function registerLocalCommands(program: Command): void {
  const local = program.command("local").description("the local fleet: sandbox hosts on this machine, each a real agent");
  local
    .command("up")
    .description("bring up the local fleet (needs PowerShell 7)")
    .option("--hosts <n>", "number of hosts", (v) => Number(v), 3)
    .action(() => {
      const pwsh = findPwsh();
      if (!pwsh) {
        process.stderr.write(
          "winfleet local up: PowerShell 7 (pwsh) is not installed, and the sandbox components run in it.\n" +
            "Install it with: dotnet tool install --global PowerShell   (then ~/.dotnet/tools/pwsh), or your OS's PowerShell package,\n" +
            "and run npm run setup again.\n",
        );
      } else {
        process.stderr.write(`winfleet local up: found ${pwsh}, but the lifecycle engine that applies the sandbox template is not built yet (issue #3).\n`);
      }
      process.exitCode = 1;
    });
}
