/**
 * `winfleet release --out DIR --key FILE`: what a node receives, signed. Two
 * bundles side by side, each signed on its own (agent/release/signing.ts):
 * - `agent/` — the single-file agent bundle (agent/release/build.ts); under `service/`, a
 *   systemd unit for Linux hosts and `register-winfleet-agent.ps1`, which
 *   registers the `winfleet-agent` Windows service exactly as the bootstrap
 *   does (for hosts set up by hand); and `node-runtime.json`, the pinned
 *   Node.js runtime the bootstrap installs (components/node-runtime.ts);
 * - `content/` — the built content bundle (`manifest.json` and its artifacts);
 *   both signatures cover the release version (agent/release/anti-rollback.ts);
 * - `agent-<version>.tgz` — `agent/` as the deterministic archive the node
 *   bootstrap downloads and unpacks into `releases\<version>` (a stack's
 *   `agent.bundle` is its URL and SHA-256), signature file included.
 * The whole release is staged and renamed into place, so a failure leaves
 * nothing half-written.
 */
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { archiveDirectory, renderServiceRegistrationScript, DEFAULT_NODE_RUNTIME } from "../../components";
import {
  canonicalJson,
  type OutputShape,
  assertReplaceable,
  replaceDirectory,
  LINUX_AGENT_CONFIG,
  LINUX_INSTALL_DIR,
  WINDOWS_INSTALL_DIR,
} from "../common";
import { buildContent } from "../content";
import { renderSystemdUnit } from "../upgrade";
import { buildBundles, SIGNATURE_FILE, signBundle } from "../release";

/** What a release holds at its top. */
export const RELEASE_SHAPE: OutputShape = {
  what: "a release",
  marker: `agent/${SIGNATURE_FILE}`,
  owns: (e) =>
    e.isDirectory()
      ? e.name === "agent" || e.name === "content"
      : e.isFile() && /^agent-.+\.tgz(\.sha256)?$/.test(e.name),
};

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
  /** The agent archive's file name in the release, and its SHA-256 (a stack's `agent.bundle.sha256`). */
  readonly archive: { readonly file: string; readonly sha256: string };
}

/** Builds, lays out and signs a release into `out` (an earlier release there is replaced; anything else is refused). */
export async function release(options: ReleaseOptions): Promise<ReleaseResult> {
  await assertReplaceable(options.out, RELEASE_SHAPE);
  await mkdir(dirname(options.out), { recursive: true });
  const staging = await mkdtemp(join(dirname(options.out), `.${basename(options.out)}.release-`));
  try {
    const built = await buildBundles(options.repo, join(staging, "build"), ["agent"]);
    const agent = join(staging, "release", "agent");
    await cp(join(staging, "build", "agent"), agent, { recursive: true });
    await mkdir(join(agent, "service"), { recursive: true });
    await writeFile(
      join(agent, "service", "winfleet-agent.service"),
      renderSystemdUnit({
        installDir: LINUX_INSTALL_DIR,
        node: "/usr/bin/node",
        args: ["serve", "--config", LINUX_AGENT_CONFIG],
      }),
    );
    await writeFile(
      join(agent, "service", "register-winfleet-agent.ps1"),
      renderServiceRegistrationScript(DEFAULT_NODE_RUNTIME.exe, WINDOWS_INSTALL_DIR),
    );
    await writeFile(join(agent, "node-runtime.json"), `${canonicalJson(DEFAULT_NODE_RUNTIME)}\n`);
    const content = join(staging, "release", "content");
    await buildContent(options.contentDir, content);
    const pkg = JSON.parse(await readFile(join(agent, "package.json"), "utf8")) as { version: string };
    const version = pkg.version || built.version;
    // Both bundles carry the release version in their signature, so a node can refuse an older release.
    const signedAgent = await signBundle(agent, options.privateKeyPem, version);
    const signedContent = await signBundle(content, options.privateKeyPem, version);
    const archived = await archiveDirectory(agent);
    const file = `agent-${version}.tgz`;
    await writeFile(join(staging, "release", file), archived.data);
    await writeFile(join(staging, "release", `${file}.sha256`), `${archived.sha256}  ${file}\n`);
    await replaceDirectory(join(staging, "release"), options.out, RELEASE_SHAPE);
    return {
      version,
      keyId: signedAgent.keyId,
      agentFiles: signedAgent.files,
      contentFiles: signedContent.files,
      archive: { file, sha256: archived.sha256 },
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
