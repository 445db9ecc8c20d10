/**
 * `winfleet-agent retarget`, as an upgrader pod runs it: a real content
 * archive (built and archived as the stack does) from a file or a loopback
 * URL, refused on a wrong SHA-256 with nothing changed, the agent config
 * rewritten with its secrets kept, and the host converged by the agent.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { buildArchive } from "../../components/content-bundle";
import { agent, applyUntilSettled, tempDir } from "../support";

const CONTENT = join(__dirname, "..", "..", "content");

describe("retarget", () => {
  const dir = tempDir("retarget-");
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("moves a host to new content and template, from a file or a URL, and refuses a wrong digest", async () => {
    const built = await buildArchive(CONTENT, join(dir, "build"));
    const install = join(dir, "winfleet");
    mkdirSync(install);
    const config = join(install, "agent.json");
    const root = join(dir, "host");
    mkdirSync(root);
    writeFileSync(
      config,
      JSON.stringify({
        content: join(dir, "none"),
        template: "sandbox",
        templateVersion: "1.0.0",
        root,
        secrets: { JOIN: "keep-me" },
      }),
    );

    const wrong = await agent([
      "retarget",
      "--config",
      config,
      "--template",
      "sandbox",
      "--template-version",
      "1.1.0",
      "--content-archive",
      built.path,
      "--content-sha256",
      "0".repeat(64),
    ]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /has SHA-256 [0-9a-f]{64}, expected 0{64}; nothing was changed/);
    assert.equal((JSON.parse(readFileSync(config, "utf8")) as { templateVersion: string }).templateVersion, "1.0.0");

    const served = createServer((req, res) => {
      if (req.url === "/content.tgz") res.end(readFileSync(built.path));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => served.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(served.address() as { port: number }).port}/content.tgz`;
    try {
      const ok = await agent([
        "retarget",
        "--config",
        config,
        "--template",
        "sandbox",
        "--template-version",
        "1.1.0",
        "--content-url",
        url,
        "--content-sha256",
        built.sha256,
      ]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /retargeted to sandbox 1\.1\.0/);
    } finally {
      served.close();
    }
    const after = JSON.parse(readFileSync(config, "utf8")) as {
      content: string;
      templateVersion: string;
      secrets: Record<string, string>;
    };
    assert.equal(after.templateVersion, "1.1.0");
    assert.deepEqual(after.secrets, { JOIN: "keep-me" });
    assert.equal(after.content, join(install, "content", built.sha256.slice(0, 12)));

    const again = await agent([
      "retarget",
      "--config",
      config,
      "--template",
      "sandbox",
      "--template-version",
      "1.1.0",
      "--content-archive",
      built.path,
      "--content-sha256",
      built.sha256,
    ]);
    assert.match(again.stdout, /already at sandbox 1\.1\.0/);

    // The agent reads the unpacked bundle like any content.
    const applied = await applyUntilSettled(["--config", config]);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(readFileSync(join(root, "winfleet/sandbox/etc/node.env"), "utf8"), /^FORMAT=2/);
  });

  it("needs exactly one source (usage)", async () => {
    const r = await agent([
      "retarget",
      "--config",
      "x.json",
      "--template",
      "t",
      "--template-version",
      "1",
      "--content-sha256",
      "a".repeat(64),
    ]);
    assert.equal(r.code, 2);
  });
});
