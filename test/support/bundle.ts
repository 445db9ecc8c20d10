/**
 * The agent as it ships, for tests that must exercise what is released rather
 * than the TypeScript sources: the single-file bundle `npm run build` makes.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { buildBundles } from "../../agent/release/build";

const REPO = join(__dirname, "..", "..");

/**
 * The path of a current agent bundle's entry (`dist/agent/bin/winfleet-agent.js`):
 * the checkout's own when `npm run build` made one from the sources as they are
 * now (the launcher with WINFLEET_LAUNCH=bundle accepts it), else one built here
 * with esbuild into `scratch`, as the benchmarks do. Node runs the entry directly.
 */
export async function agentBundle(scratch: string): Promise<string> {
  const probe = spawnSync(process.execPath, [join(REPO, "bin", "winfleet-agent.js"), "--version"], {
    encoding: "utf8",
    env: { ...process.env, WINFLEET_LAUNCH: "bundle" },
  });
  if (probe.status === 0) return join(REPO, "dist", "agent", "bin", "winfleet-agent.js");
  const out = join(scratch, "dist");
  await buildBundles(REPO, out, ["agent"]);
  return join(out, "agent", "bin", "winfleet-agent.js");
}
