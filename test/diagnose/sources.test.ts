/**
 * A hung source cannot hang diagnose: in process, injected collectors that
 * never answer are abandoned at their limit with what they gave kept, and a
 * hung command's process is killed; through the CLI, a real tool that hangs
 * (an `ip` that never returns) is cut off by --timeout.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { Collector } from "../../agent/diagnose/collector";
import { diagnose } from "../../agent/diagnose/diagnose";
import { commandCollector } from "../../agent/diagnose/sources";
import { unpack } from "./support";
import { agent, alive, tempDir, waitFor } from "../support";

const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("a hung source", () => {
  it("is abandoned at its limit, keeping what it collected, while every other source is collected", async () => {
    const dir = tempDir("diagnose-hung-");
    dirs.push(dir);
    const pidFile = join(dir, "sleeper.pid");
    const hung: Collector = {
      name: "hung-hns",
      source: "an HNS call that never returns",
      async collect(_ctx, sink) {
        sink.file("windows/hns-partial.txt", "the networks listed before it hung\n");
        await new Promise<never>(() => undefined);
      },
    };
    const sleeper = commandCollector("hung-command", "system/hung.txt", [
      "sh",
      "-c",
      `echo $$ > ${pidFile}; exec sleep 1000`,
    ]);
    const started = Date.now();
    const d = await diagnose({
      root: join(dir, "root"),
      since: new Date(0),
      runDir: join(dir, "run"),
      timeoutMs: 700,
      extraCollectors: [hung, sleeper],
    });
    assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
    const outcome = Object.fromEntries(d.manifest.collectors.map((c) => [c.collector, c.outcome]));
    assert.equal(outcome["hung-hns"], "timed out");
    assert.equal(outcome["hung-command"], "timed out");
    assert.equal(outcome.status, "ok", "the other sources were collected");
    assert.match(d.manifest.missing.find((m) => m.collector === "hung-hns")?.reason ?? "", /^timed out after 700 ms/);
    assert.equal(
      d.files.get("windows/hns-partial.txt")?.toString(),
      "the networks listed before it hung\n",
      "what it gave before the hang is kept",
    );
    assert.ok(d.files.has("agent/status.json"));
    const pid = Number(readFileSync(pidFile, "utf8"));
    await waitFor(() => !alive(pid), 5000, "the hung command to be killed");
  });

  it("through the CLI: a tool that hangs is cut off by --timeout, and the archive is still written", async () => {
    const dir = tempDir("diagnose-hung-cli-");
    dirs.push(dir);
    const bin = join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "ip"), "#!/bin/sh\nexec sleep 1000\n");
    chmodSync(join(bin, "ip"), 0o755);
    const out = join(dir, "d.tar.gz");
    const started = Date.now();
    const r = await agent(["diagnose", "--root", join(dir, "root"), "--timeout", "1s", "--out", out], {
      env: { PATH: `${bin}:${process.env.PATH ?? ""}` },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
    assert.ok(existsSync(out));
    const u = unpack(out);
    for (const name of ["ip-addr", "ip-route"]) {
      assert.match(
        u.manifest.missing.find((m) => m.collector === name)?.reason ?? "",
        /^timed out after 1000 ms/,
        name,
      );
    }
    assert.ok(u.files.has("system/ps.txt"), "the sources that answer are collected");
  });
});
