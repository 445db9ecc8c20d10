/**
 * `winfleet release --out DIR --key FILE`: what a node receives, signed. Two
 * bundles side by side, each signed on its own (signing.ts):
 * - `agent/` — the single-file agent bundle (build.ts), a systemd unit for
 *   Linux hosts under `service/` (on Windows the bootstrap registers the
 *   `winfleet-agent` scheduled task itself) and `node-runtime.json`, the pinned
 *   Node.js runtime the bootstrap installs (components/node-runtime.ts);
 * - `content/` — the built content bundle (`manifest.json` and its artifacts).
 * The whole release is staged and renamed into place, so a failure leaves
 * nothing half-written.
 */
import { cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";
import { canonicalJson } from "../common/canonical-json";
import { buildContent } from "../content/build";
import { renderSystemdUnit } from "../upgrade/service-units";
import { buildBundles } from "./build";
import { signBundle } from "./signing";

/** What to release. */
export interface ReleaseOptions {
  readonly repo: string;
  readonly contentDir: string;
  readonly out: string;
  readonly privateKeyPem: string;
}

/** What {@link release} wrote. */
export interface ReleaseResult {
  readonly version: string;
  readonly keyId: string;
  readonly agentFiles: number;
  readonly contentFiles: number;
}

/** Builds, lays out and signs a release into `out` (replaced as a whole). */
export async function release(options: ReleaseOptions): Promise<ReleaseResult> {
  await mkdir(dirname(options.out), { recursive: true });
  const staging = await mkdtemp(join(dirname(options.out), `.${basename(options.out)}.release-`));
  try {
    const built = await buildBundles(options.repo, join(staging, "build"));
    const agent = join(staging, "release", "agent");
    await cp(join(staging, "build", "agent"), agent, { recursive: true });
    await mkdir(join(agent, "service"), { recursive: true });
    await writeFile(join(agent, "service", "winfleet-agent.service"), renderSystemdUnit({ installDir: "/opt/winfleet", node: "/usr/bin/node", args: ["serve", "--config", "/etc/winfleet/agent.json"] }));
    await writeFile(join(agent, "node-runtime.json"), `${canonicalJson(DEFAULT_NODE_RUNTIME)}\n`);
    const content = join(staging, "release", "content");
    await buildContent(options.contentDir, content);
    const signedAgent = await signBundle(agent, options.privateKeyPem);
    const signedContent = await signBundle(content, options.privateKeyPem);
    await rm(options.out, { recursive: true, force: true });
    await rename(join(staging, "release"), options.out);
    const pkg = JSON.parse(await readFile(join(options.out, "agent", "package.json"), "utf8")) as { version: string };
    return { version: pkg.version || built.version, keyId: signedAgent.keyId, agentFiles: signedAgent.files, contentFiles: signedContent.files };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
