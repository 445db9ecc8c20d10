/** The agent's version, reported by `--version`, the wins `GetVersion` RPC and the status table. */
export const AGENT_VERSION = "0.1.0";
