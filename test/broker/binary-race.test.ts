/**
 * The whitelist's check and the copy that runs must see the same file. A
 * whitelisted file or directory swapped for a symbolic link after the check
 * (deterministically, between the two steps; then racing a real process that
 * swaps it over and over while clients start it through a real broker) never
 * runs the link's target.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type * as grpc from "@grpc/grpc-js";
import { prepareBinary } from "../../agent/broker/binary";
import { ProcessPathPolicy } from "../../agent/broker/whitelist";
import { AgentError } from "../../agent/common/errors";
import { call, script, startBroker, winsClient } from "./harness";
import { sleep, tempDir } from "../support";

const sha1 = (f: string): string => createHash("sha1").update(readFileSync(f)).digest("hex");

async function refusal(p: Promise<unknown>): Promise<AgentError> {
  const r = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(r instanceof AgentError, `not refused: ${String(r)}`);
  return r;
}

describe("the file that runs is the file that was checked", () => {
  it("refuses a whitelisted file swapped for a link after the check", async () => {
    const dir = tempDir("race-");
    const tool = script(join(dir, "tool.sh"), "echo good");
    const evil = script(join(dir, "evil.sh"), `touch '${join(dir, "pwned")}'`);
    await new ProcessPathPolicy([tool], false).check(tool);
    symlinkSync(evil, join(dir, "swap"));
    renameSync(join(dir, "swap"), tool);
    const e = await refusal(prepareBinary(tool, sha1(evil)));
    assert.equal(e.code, "INVALID_INPUT");
    assert.match(e.message, /is a symbolic link/);
    assert.equal(existsSync(join(dir, "rancher-wins-tool.sh")), false);
  });

  it("refuses a whitelisted file whose directory was swapped for a link after the check", async () => {
    const dir = tempDir("race-");
    mkdirSync(join(dir, "bin"));
    mkdirSync(join(dir, "attacker"));
    const tool = script(join(dir, "bin", "tool.sh"), "echo good");
    const evil = script(join(dir, "attacker", "tool.sh"), "echo evil");
    await new ProcessPathPolicy([tool], false).check(tool);
    renameSync(join(dir, "bin"), join(dir, "bin-old"));
    symlinkSync(join(dir, "attacker"), join(dir, "bin"));
    const e = await refusal(prepareBinary(tool, sha1(evil)));
    assert.match(e.message, /resolves to .*attacker\/tool\.sh through a symbolic link/);
  });

  it("never runs a link's target while another process swaps the whitelisted file (40 starts)", async () => {
    const dir = tempDir("race-");
    const pwned = join(dir, "pwned");
    const tool = script(join(dir, "tool.sh"), "echo good");
    const evil = script(join(dir, "evil.sh"), `touch '${pwned}'`);
    script(join(dir, "good.sh"), "echo good");
    symlinkSync(evil, join(dir, "link"));
    // Swaps tool.sh between the good file and the link, atomically and as fast as it can, for at most 30 s.
    const swapper = spawn(
      process.execPath,
      [
        "-e",
        `
      const fs = require("fs"); const d = ${JSON.stringify(dir)}; const end = Date.now() + 30000;
      while (Date.now() < end) {
        fs.symlinkSync(${JSON.stringify(evil)}, d + "/l2"); fs.renameSync(d + "/l2", d + "/tool.sh");
        fs.copyFileSync(d + "/good.sh", d + "/g2"); fs.chmodSync(d + "/g2", 0o755); fs.renameSync(d + "/g2", d + "/tool.sh");
      }`,
      ],
      { stdio: "ignore" },
    );
    const { broker, socket } = await startBroker({ processPaths: [tool] });
    const client = winsClient("ProcessService", socket);
    let started = 0;
    try {
      for (let i = 0; i < 40; i++) {
        const r = await call<{ Data: { Value: string } }>(client, "Start", { Path: tool, Checksum: sha1(evil) }).catch(
          () => undefined,
        );
        if (!r) continue;
        started++;
        const ka = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(
          client,
          () => undefined,
        );
        ka.write({ Data: r.Data });
        await sleep(50);
        ka.end();
        await sleep(20);
      }
    } finally {
      swapper.kill("SIGKILL");
      client.close();
      await broker.stop();
    }
    assert.equal(existsSync(pwned), false, `the link's target ran (${started} of 40 starts were accepted)`);
  });
});
