/**
 * docs/content.md is what `winfleet content docs` generates from content/,
 * byte for byte; the command's contract (--out, --check, stdout, help, exit
 * codes) through the real CLI.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { analyzeContent } from "../../agent/content/analysis";
import { renderContentReference } from "../../agent/content/docs";
import { scratchDir } from "../support";

const ROOT = join(__dirname, "..", "..");
const CONTENT = join(ROOT, "content");
const REFERENCE = join(ROOT, "docs", "content.md");
const winfleet = (...args: string[]) =>
  spawnSync(process.execPath, [join(ROOT, "bin", "winfleet.js"), ...args], { encoding: "utf8", cwd: ROOT });
const scratch = scratchDir("content-docs-");

describe("docs/content.md", () => {
  it("is what winfleet content docs generates (run it after changing content/)", async () => {
    const expected = renderContentReference(await analyzeContent(CONTENT)).split("\n");
    const actual = readFileSync(REFERENCE, "utf8").split("\n");
    const line = expected.findIndex((l, i) => actual[i] !== l);
    if (line >= 0 || actual.length !== expected.length) {
      const at = line >= 0 ? line : Math.min(actual.length, expected.length);
      assert.fail(
        `docs/content.md is stale from line ${at + 1} (run \`node bin/winfleet.js content docs\`):\n  committed: ${actual[at] ?? "(end)"}\n  generated: ${expected[at] ?? "(end)"}`,
      );
    }
  });

  it("covers every Windows template and component, with versions, variables, downloads and host changes", () => {
    const text = readFileSync(REFERENCE, "utf8");
    for (const t of ["win2019 1.1.0", "win2022 1.1.0", "win2025 1.1.0", "rke2-windows 1.1.0"])
      assert.ok(text.includes(`### ${t}`), t);
    for (const c of [
      "containerd 1.7.25-1",
      "kubelet 1.34.7-1",
      "kube-proxy 1.34.7-1",
      "calico 3.31.7",
      "join-kubeadm 1.1.0",
      "join-rke2 1.34.7+rke2r1-1",
      "windows-exporter 0.31.8-1",
      "csi-proxy 1.1.2-hotfix.20230807-1",
      "winfleet-broker 1.0.0",
      "node-reset 1.1.0",
      "prereqs 1.1.0",
      "winfleet-common 1.1.0",
    ]) {
      assert.ok(text.includes(`### ${c}`), c);
    }
    assert.match(
      text,
      /\| service \| `kubelet` \| under NSSM, runs powershell\.exe kubelet-service\.ps1; after containerd; start Automatic;/,
    );
    assert.match(text, /\| firewall rule \| `winfleet-kubelet` \| inbound TCP 10250 \|/);
    assert.match(text, /\| scheduled task \| `winfleet-node-reset` \| runs reset\.ps1 at startup as SYSTEM \|/);
    assert.match(
      text,
      /\| `KUBE_BOOTSTRAP_TOKEN` \| no \| yes \| {2}\| bootstrap token <id>\.<secret>; needed only until the node has joined/,
    );
    assert.match(text, /kubernetes\/kubernetes CHANGELOG\/CHANGELOG-1\.34\.md/);
  });

  it("states each template's cluster prerequisites: Calico installed by the operator, IPAM strictAffinity, VXLAN VNI, kube-proxy's RBAC", () => {
    const text = readFileSync(REFERENCE, "utf8");
    for (const t of ["win2019", "win2022", "win2025"]) {
      const section = text.slice(
        text.indexOf(`### ${t} 1.1.0`),
        text.indexOf("### ", text.indexOf(`### ${t} 1.1.0`) + 4),
      );
      assert.match(section, /What the cluster must provide:/, t);
      assert.match(section, /- calico: Calico 3\.31 installed by the Tigera operator/, t);
      assert.match(section, /- calico: Calico IPAM with strictAffinity true/, t);
      assert.match(section, /- calico: a FelixConfiguration whose vxlanVNI is 4096 or more/, t);
      assert.match(
        section,
        /- kube-proxy: RBAC for kube-proxy's own identity: .*winfleet:kube-proxy ClusterRole.*SelfSubjectAccessReviews/,
        t,
      );
    }
  });
});

describe("winfleet content docs", () => {
  it("--check: exit 0 when current, 1 and a message naming the command when stale", () => {
    assert.equal(winfleet("content", "docs", "--check").status, 0);
    const stale = join(scratch, "stale.md");
    writeFileSync(stale, "# old\n");
    const r = winfleet("content", "docs", "--check", "--out", stale);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /stale\.md is stale: run winfleet content docs/);
    assert.equal(readFileSync(stale, "utf8"), "# old\n", "--check writes nothing");
  });

  it("--out FILE writes the reference (parents made, no temporary left behind); --out - prints it", () => {
    const out = join(scratch, "deep", "ref.md");
    const r = winfleet("content", "docs", "--out", out);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(out, "utf8"), readFileSync(REFERENCE, "utf8"));
    assert.deepEqual(readdirSync(join(scratch, "deep")), ["ref.md"]);
    assert.equal(winfleet("content", "docs", "--out", "-").stdout, readFileSync(REFERENCE, "utf8"));
  });

  it("--content DIR documents that tree, and refuses one that does not validate without writing", () => {
    const copy = join(scratch, "content");
    cpSync(CONTENT, copy, { recursive: true });
    const meta = join(copy, "components", "winfleet-broker", "1.0.0", "metadata.json");
    writeFileSync(meta, readFileSync(meta, "utf8").replace('"default": "9796"', '"default": "9796,9100"'));
    const changed = winfleet("content", "docs", "--content", copy, "--out", "-");
    assert.equal(changed.status, 0, changed.stderr);
    assert.match(changed.stdout, /`9796,9100`/);
    writeFileSync(meta, "{ not json");
    const out = join(scratch, "never.md");
    const bad = winfleet("content", "docs", "--content", copy, "--out", out);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /winfleet-broker\/1\.0\.0\/metadata\.json.*not valid JSON/);
    assert.equal(existsSync(out), false);
  });

  it("has --help, and exits 2 on a usage error", () => {
    const help = winfleet("content", "docs", "--help");
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--content <dir>/);
    assert.match(help.stdout, /--check/);
    assert.equal(winfleet("content", "docs", "--no-such-option").status, 2);
  });
});
