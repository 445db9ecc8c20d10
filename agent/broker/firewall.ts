/**
 * Firewall rules for a host process's exposed ports, as wins made them: one
 * non-persistent (ActiveStore) rule per port named `<process>-<PROTO>-<port>`,
 * removed when the process is killed. A no-op where there is no Windows firewall.
 */

/** A port a host process exposes. */
export interface Expose {
  readonly protocol: "TCP" | "UDP";
  readonly port: number;
}

/** Opens and closes a process's firewall rules. */
export interface Firewall {
  open(processName: string, exposes: readonly Expose[]): Promise<void>;
  close(processName: string): Promise<void>;
}

/** For hosts without the Windows firewall: nothing to do. */
export const noFirewall: Firewall = {
  open: () => Promise.resolve(),
  close: () => Promise.resolve(),
};

const quote = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** The PowerShell that opens the rules (pure; names are quoted, never interpolated raw). */
export function renderOpenRules(processName: string, exposes: readonly Expose[]): string {
  return exposes
    .filter((e) => e.port !== 0)
    .map((e) => {
      const name = quote(`${processName}-${e.protocol}-${e.port}`);
      return `New-NetFirewallRule -Name ${name} -DisplayName ${name} -Action Allow -Protocol ${e.protocol} -LocalPort ${e.port} -Enabled True -PolicyStore ActiveStore | Out-Null`;
    })
    .join("\n");
}

/** The PowerShell that removes every rule of a process. */
export function renderCloseRules(processName: string): string {
  return `Get-NetFirewallRule -Name ${quote(`${processName}-*`)} -PolicyStore ActiveStore -ErrorAction SilentlyContinue | Remove-NetFirewallRule`;
}
