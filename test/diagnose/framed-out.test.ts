/**
 * `winfleet-agent diagnose --out -` through the real CLI: the archive on stdout, framed for a
 * container log, is the archive `--out FILE` writes (the same entries), nothing else is on
 * stdout, and no file is written.
 */
import assert from "node:assert/strict";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { unframeArchive } from "../../agent/diagnose/transport";
import { agent, scratchDir } from "../support";
import { entryJson, unpack, writeAgentConfig } from "./support";

describe("winfleet-agent diagnose --out -", () => {
  it("prints the archive framed, and only that, on stdout", async () => {
    const dir = scratchDir("diagnose-framed-");
    const config = writeAgentConfig(
      join(dir, "etc"),
      {
        nodeName: "node-f",
        root: join(dir, "root"),
        content: join(dir, "content"),
        template: "t",
        templateVersion: "1",
      },
      '{"msg":"hello"}\n',
    );
    // The agent runs in the repository; a default archive would land there.
    const REPO = join(__dirname, "..", "..");
    const archives = () => readdirSync(REPO).filter((f) => f.startsWith("winfleet-diagnose-"));
    const before = archives();
    const r = await agent(["diagnose", "--out", "-", "--config", config, "--since", "1h", "--timeout", "10s"], {
      env: { HOME: dir },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^winfleet-diagnose begin v1 size=\d+ sha256=[0-9a-f]{64} lines=\d+\n(winfleet-diagnose \d+ [A-Za-z0-9+/=]+\n)+winfleet-diagnose end\n$/,
    );
    const archive = join(dir, "framed.tar.gz");
    writeFileSync(archive, unframeArchive(r.stdout));
    const u = unpack(archive);
    assert.equal(entryJson<{ host: string }>(u, "manifest.json").host, "node-f");
    assert.equal(u.files.get("agent/agent.log")?.toString(), '{"msg":"hello"}\n');
    assert.deepEqual(archives(), before, "no archive file is written");
  });
});
