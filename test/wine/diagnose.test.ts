/**
 * `diagnose` on Windows: the bundle's collectors on a node whose state the
 * lifecycle engine wrote (through the test-only cmd runner), and the archive
 * they make, read back here with Node's zlib and a tar reader of the test's own.
 *
 * Relies on (Windows): ipconfig.exe, route.exe and wevtutil.exe as Windows
 * ships them, log directories under the root, taskkill ending a collector that
 * outlives its time.
 * Wine differs: its powershell.exe is a stub that prints nothing and exits 0,
 * so the PowerShell collectors (services, firewall rules, host processes,
 * scheduled task, pending reboot, OS build) are archived empty here; route.exe
 * is missing and wevtutil and hnsdiag answer as Wine implements them. What
 * those collectors gather is checked on Windows hosts; their scripts are
 * parsed and checked as data on Linux (test/diagnose).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { gunzipSync } from "node:zlib";
import { writeContent } from "../support";
import { agent, program, scratch, start, underWine, wineDiffers } from "./support";

const T = { timeout: 300_000 };
const dir = scratch("diagnose");

/** The entries of a ustar archive: name → bytes. */
function untar(archive: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (let at = 0; at + 512 <= archive.length;) {
    const header = archive.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const field = (from: number, to: number): string =>
      header.subarray(from, to).toString("latin1").replace(/\0.*$/s, "");
    const name = field(345, 500) ? `${field(345, 500)}/${field(0, 100)}` : field(0, 100);
    const size = parseInt(field(124, 136).trim() || "0", 8);
    if (field(156, 157) === "0" || field(156, 157) === "") out.set(name, archive.subarray(at + 512, at + 512 + size));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

describe("diagnose on Windows", () => {
  it(
    "collects the node's state, logs and Windows' own evidence into an archive its manifest describes",
    T,
    async (t) => {
      // A node: content applied by the engine, a secret in its config, a kubelet log under the root.
      const root = join(dir, "root");
      const secret = "wine-diagnose-secret-0b9f3c";
      const content = writeContent(
        [
          {
            name: "app",
            version: "1",
            files: { "/opt/app/config": "setting=1\n" },
            metadata: { shell: "powershell", install: { commands: [`>>"%WINFLEET_ROOT%\\runs.log" echo installed`] } },
          },
        ],
        [{ name: "node", version: "1", packages: ["app_1"] }],
        join(dir, "content"),
      );
      const applied = await start(program("lifecycle"), ["--content", content, "--template", "node", "--root", root])
        .done;
      assert.equal(applied.code, 0, applied.stderr);
      mkdirSync(join(root, "var", "log", "kubelet"), { recursive: true });
      writeFileSync(
        join(root, "var", "log", "kubelet", "kubelet.log"),
        `I0101 kubelet started with token ${secret}\r\n`,
      );
      const config = join(dir, "agent.json");
      writeFileSync(config, JSON.stringify({ root, content, template: "node", secrets: { JOIN_TOKEN: secret } }));

      const out = join(dir, "node.tar.gz");
      const r = await agent(["diagnose", "--config", config, "--out", out, "--timeout", "20s"], { timeoutMs: 240_000 });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^wrote .*node\.tar\.gz: \d+ entries/);

      const bytes = readFileSync(out);
      const entries = untar(gunzipSync(bytes));
      const manifest = JSON.parse(entries.get("manifest.json")?.toString() ?? "{}") as {
        platform: string;
        root: string;
        entries: { path: string; sha256: string }[];
        missing: { path: string; reason: string }[];
        secretValuesMasked: number;
      };
      assert.equal(manifest.platform, "win32");
      assert.equal(manifest.root, root);
      // Every entry is there, with the digest the manifest gives, under a name with `/` only.
      for (const e of manifest.entries) {
        const data = entries.get(e.path);
        assert.ok(data, `${e.path} is in the archive`);
        assert.equal(createHash("sha256").update(data).digest("hex"), e.sha256, e.path);
        assert.doesNotMatch(e.path, /\\/, `${e.path}: archive names use /`);
      }
      const names = manifest.entries.map((e) => e.path);
      for (const expected of ["agent/journal.json", "logs/kubelet/kubelet.log", "windows/ipconfig.txt"])
        assert.ok(names.includes(expected), `${expected} collected (${names.join(", ")})`);
      // The secret is masked wherever it was found.
      assert.ok(manifest.secretValuesMasked >= 1);
      for (const [name, data] of entries) assert.ok(!data.includes(secret), `${name} holds the secret`);
      assert.match(entries.get("logs/kubelet/kubelet.log")?.toString() ?? "", /kubelet started with token \[secret\]/);
      // The journal says what the engine applied.
      assert.match(entries.get("agent/journal.json")?.toString() ?? "", /"app"/);
      // What a collector could not gather is said, not left out.
      const missing = new Map(manifest.missing.map((m) => [m.path, m.reason]));
      if (underWine) {
        wineDiffers(t, "powershell.exe is a stub (its collectors archive nothing) and route.exe is missing");
        assert.match(missing.get("windows/routes.txt") ?? "", /could not run/);
      } else {
        assert.ok(names.includes("windows/routes.txt"), "route print collected");
        assert.match(entries.get("windows/host-version.json")?.toString() ?? "", /CurrentBuild/);
      }
    },
  );
});
