/**
 * The apply lock: several contenders started at once, many times over, with a
 * dead holder's record already in place (in one process, and as real
 * processes), never hold it together; a holder killed with SIGKILL gives it up
 * without anyone judging it dead.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { hostname } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { linuxProcessHost } from "../../agent/broker/process-host";
import { acquireLock, lockEndpoint } from "../../agent/lifecycle/lock";
import { exitOf, readUntil, sleep, tempDir } from "../support";

const WORKER = join(__dirname, "lock-worker.ts");

function contender(
  root: string,
  go: string,
  log: string,
  holdMs: number,
): { child: ChildProcess; code: Promise<number | null> } {
  const child = spawn(process.execPath, ["--import", "tsx", WORKER, root, go, log, String(holdMs)], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  return { child, code: exitOf(child) };
}

/** The most processes holding the lock at one time, from the +pid/-pid log. */
function overlap(log: string): number {
  let now = 0;
  let most = 0;
  for (const line of readFileSync(log, "utf8").split("\n").filter(Boolean)) {
    now += line.startsWith("+") ? 1 : -1;
    most = Math.max(most, now);
  }
  return most;
}

describe("the apply lock", () => {
  it("is held by at most one of five agent processes started at once, over 6 rounds with a dead holder's record in place", async () => {
    const root = tempDir("winfleet-lock-");
    for (let round = 0; round < 6; round++) {
      const go = join(root, `go-${round}`);
      const log = join(root, `log-${round}`);
      writeFileSync(log, "");
      mkdirSync(join(root, ".winfleet"), { recursive: true });
      // What a crashed agent leaves: a record naming a process that is gone.
      writeFileSync(
        join(root, ".winfleet", "lock"),
        JSON.stringify({
          pid: 999_999_999,
          identity: "gone",
          command: "winfleet-agent apply",
          host: hostname(),
          since: "2026-01-01T00:00:00Z",
        }),
      );
      const all = Array.from({ length: 5 }, () => contender(root, go, log, 300));
      await sleep(1500); // every contender loaded and polling
      writeFileSync(go, "");
      const codes = await Promise.all(all.map((c) => c.code));
      assert.equal(
        overlap(log),
        1,
        `round ${round}: ${readFileSync(log, "utf8").replace(/\n/g, " ")} exit codes ${codes.join(",")}`,
      );
      assert.ok(
        codes.every((c) => c === 0 || c === 3),
        `round ${round}: exit codes ${codes.join(",")}`,
      );
    }
  });

  it("goes to exactly one of four acquisitions started at once against a dead holder's record (300 trials)", async () => {
    // A probe as uneven as a real one: every contender judges the recorded holder dead, at slightly different times.
    const uneven = {
      identity: async (pid: number) => {
        await sleep(Math.random() * 3);
        return pid === process.pid ? "me" : undefined;
      },
    };
    for (let trial = 0; trial < 300; trial++) {
      const root = tempDir("winfleet-lock-");
      mkdirSync(join(root, ".winfleet"));
      writeFileSync(
        join(root, ".winfleet", "lock"),
        JSON.stringify({
          pid: 999_999_999,
          identity: "gone",
          command: "winfleet-agent apply",
          host: hostname(),
          since: "2026-01-01T00:00:00Z",
        }),
      );
      const results = await Promise.allSettled([0, 1, 2, 3].map(() => acquireLock(root, "test", uneven)));
      const held = results.filter(
        (r): r is PromiseFulfilledResult<Awaited<ReturnType<typeof acquireLock>>> => r.status === "fulfilled",
      );
      assert.equal(held.length, 1, `trial ${trial}: ${held.length} holders`);
      await Promise.all(held.map((h) => h.value.release()));
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("names its endpoint with a key only the agent's user can read, so no one else can hold it first", async () => {
    const root = tempDir("winfleet-lock-");
    const lock = await acquireLock(root, "test", linuxProcessHost);
    await lock.release();
    const key = join(root, ".winfleet", "lock-key");
    assert.equal(statSync(key).mode & 0o777, 0o600);
    const dir = realpathSync(join(root, ".winfleet"));
    assert.notEqual(
      lockEndpoint(dir, readFileSync(key, "utf8").trim(), "linux"),
      lockEndpoint(dir, "another key", "linux"),
    );
    // A squatter on the name a key-less scheme would use does not block the lock.
    const squat = createServer();
    await new Promise<void>((r) => squat.listen(lockEndpoint(dir, "", "linux"), r));
    try {
      await (await acquireLock(root, "test", linuxProcessHost)).release();
    } finally {
      squat.close();
    }
  });

  it("is free again as soon as its holder is killed", async () => {
    const root = tempDir("winfleet-lock-");
    const go = join(root, "go");
    const log = join(root, "log");
    writeFileSync(go, "");
    writeFileSync(log, "");
    const holder = contender(root, go, log, 60_000);
    await readUntil(log, /^\+/, 10_000);
    await assert.rejects(acquireLock(root, "test", linuxProcessHost), /another winfleet-agent holds/);
    holder.child.kill("SIGKILL");
    await holder.code;
    const lock = await acquireLock(root, "test", linuxProcessHost);
    await lock.release();
  });
});
