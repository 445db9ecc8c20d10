/**
 * `winfleet local diagnose HOST`: a local fleet host's diagnostics, from its
 * own config, log and broker state, through the real CLIs.
 */
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { hostPaths, renderHostConfig } from "../../agent/fleet/spec";
import { entryJson, unpack } from "../diagnose/support";
import { REPO, winfleet } from "./support";
import { applyUntilSettled, tempDir } from "../support";

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("winfleet local diagnose", () => {
  it("archives a host's state, config and log, and names an unknown host with the hosts there are", async () => {
    const state = tempDir("local-diagnose-");
    dirs.push(state);
    const paths = hostPaths(state, "local-1");
    mkdirSync(paths.dir, { recursive: true });
    writeFileSync(
      paths.config,
      renderHostConfig(
        "local-1",
        paths,
        { content: join(REPO, "content"), template: "sandbox", templateVersion: "1.0.0" },
        [],
      ),
    );
    writeFileSync(paths.log, '{"level":"info","msg":"serving"}\n');
    const applied = await applyUntilSettled(["--config", paths.config]);
    assert.equal(applied.code, 0, applied.stderr);

    const out = join(state, "local-1.tar.gz");
    const r = winfleet(["local", "diagnose", "local-1", "--state-dir", state, "--out", out]);
    assert.equal(r.code, 0, r.stderr);
    const u = unpack(out);
    assert.equal(entryJson<{ state: string }>(u, "agent/status.json").state, "converged");
    assert.equal(u.files.get("agent/agent.log")?.toString(), '{"level":"info","msg":"serving"}\n');
    assert.equal(entryJson<{ config: { nodeName: string } }>(u, "agent/config.json").config.nodeName, "local-1");
    assert.equal(entryJson<{ host: string }>(u, "manifest.json").host, "local-1");
    assert.equal(
      entryJson<{ from: string }>(u, "broker/processes.json").from,
      "records",
      "the host is not running: its broker's records are read",
    );

    const summary = winfleet(["local", "diagnose", "local-1", "--state-dir", state, "--summary"]);
    assert.equal(summary.code, 0, summary.stdout + summary.stderr);
    assert.match(summary.stdout, /^OK: nothing wrong found/);

    const unknown = winfleet(["local", "diagnose", "local-9", "--state-dir", state]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no host local-9 in .* \(hosts: local-1\)/);
  });
});
