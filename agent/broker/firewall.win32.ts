/** The Windows firewall, driven through PowerShell with the rendered scripts. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { type Expose, type Firewall, renderCloseRules, renderOpenRules } from "./firewall";

const run = promisify(execFile);
const powershell = (script: string) =>
  run(
    "powershell.exe",
    ["-NoLogo", "-NoProfile", "-NonInteractive", "-Command", `$ErrorActionPreference='Stop'; ${script}`],
    { windowsHide: true },
  );

/** The live Windows firewall. */
export const windowsFirewall: Firewall = {
  async open(processName: string, exposes: readonly Expose[]) {
    const script = renderOpenRules(processName, exposes);
    if (script !== "") await powershell(script);
  },
  async close(processName: string) {
    await powershell(renderCloseRules(processName));
  },
};
