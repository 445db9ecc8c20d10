/**
 * `serve`: applies on start, stops with 3010 for a reboot and continues when
 * started again, re-applies when its config changes, finds drift on its timer
 * and corrects it with autoCorrect, stops after the running command on SIGTERM
 * and resumes from the journal, and serves the broker in the same process.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AGENT_VERSION } from "../../agent/version";
import { agent, exitOf, killedAfterTests, pollUntil, REBOOT_STATUS, tempDir, writeContent } from "../support";

const REPO = join(__dirname, "..", "..");
const CONTENT = join(REPO, "content");
const roots: string[] = [];
const children = killedAfterTests();
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

interface Served {
  readonly child: ChildProcess;
  readonly events: Record<string, unknown>[];
  waitFor(
    type: string,
    predicate?: (e: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  exit: Promise<number | null>;
}

function startServe(config: string): Served {
  const child = spawn(process.execPath, [join(REPO, "bin", "winfleet-agent.js"), "serve", "--config", config], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.push(child);
  const events: Record<string, unknown>[] = [];
  let buffer = "";
  const listeners = new Set<() => void>();
  child.stdout?.on("data", (c: Buffer) => {
    buffer += c.toString();
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      events.push(JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>);
      buffer = buffer.slice(nl + 1);
      for (const l of listeners) l();
    }
  });
  child.stderr?.resume();
  const exit = exitOf(child);
  return {
    child,
    events,
    exit,
    waitFor: (type, predicate = () => true, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const found = events.find((e) => e.event === type && predicate(e));
          if (found) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`no ${type} event within ${timeoutMs} ms; saw ${events.map((e) => String(e.event)).join(", ")}`),
          );
        }, timeoutMs);
        listeners.add(check);
        check();
        void exit.then(() => setTimeout(check, 50));
      }),
  };
}

function writeConfig(file: string, config: Record<string, unknown>): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(config));
  renameSync(`${file}.tmp`, file);
}

describe("serve", () => {
  it("applies, restarts for its reboot, re-applies a changed config, corrects drift and serves the broker", async () => {
    const dir = tempDir("serve-");
    roots.push(dir);
    const root = join(dir, "host");
    mkdirSync(root);
    const file = join(dir, "agent.json");
    const config = {
      content: CONTENT,
      template: "sandbox",
      templateVersion: "1.0.0",
      root,
      nodeName: "served",
      verifyIntervalSeconds: 1,
      autoCorrect: true,
      broker: {
        listen: join(dir, "broker.sock"),
        proxy: join(dir, "proxy.sock"),
        white_list: { processPaths: ["/usr/bin/echo"] },
      },
    };
    writeConfig(file, config);

    const first = startServe(file);
    await first.waitFor("reboot-required");
    assert.equal(await first.exit, REBOOT_STATUS);

    const second = startServe(file);
    try {
      await second.waitFor("reboot-done");
      await second.waitFor("apply-converged", (e) => (e.template as { version: string }).version === "1.0.0");

      const sock = join(dir, "broker.sock");
      const ready = await agent([
        "ready",
        "--server",
        sock,
        "--template",
        "sandbox",
        "--template-version",
        "1.0.0",
        "--agent-version",
        AGENT_VERSION,
      ]);
      assert.equal(ready.code, 0, ready.stdout);
      const behind = await agent(["ready", "--server", sock, "--template-version", "1.1.0"]);
      assert.equal(behind.code, 1);
      assert.equal(behind.stdout, "not ready: it runs sandbox 1.0.0, not 1.1.0\n");

      const prc = await agent([
        "cli",
        "prc",
        "run",
        "--server",
        join(dir, "broker.sock"),
        "--path",
        "/usr/bin/echo",
        "--args",
        "through the broker",
      ]);
      assert.equal(prc.code, 0, prc.stderr);
      assert.equal(prc.stdout, "through the broker\n");

      writeConfig(file, { ...config, templateVersion: "1.1.0" });
      await second.waitFor("apply-converged", (e) => (e.template as { version: string }).version === "1.1.0");
      assert.equal(existsSync(join(root, "winfleet/sandbox/etc/node.env")), true);

      writeFileSync(join(root, "winfleet/sandbox/bin/write-config.sh"), "#!/bin/sh\necho tampered\n");
      const found = await second.waitFor("drift-found");
      assert.deepEqual(found.items, [
        { component: "sandbox-config", path: "/winfleet/sandbox/bin/write-config.sh", problem: "content" },
      ]);
      await second.waitFor("drift-corrected");
      assert.match(readFileSync(join(root, "winfleet/sandbox/bin/write-config.sh"), "utf8"), /format 2/);
    } finally {
      second.child.kill("SIGTERM");
    }
    assert.equal(await second.exit, 0);
    assert.equal(existsSync(join(dir, "broker.sock")), false, "the broker socket outlived the agent");
  });

  it("stops after the running command on SIGTERM, journals where it was, and resumes there", async () => {
    const dir = tempDir("serve-term-");
    roots.push(dir);
    const root = join(dir, "host");
    mkdirSync(root);
    const log = (id: string): string => `echo ${id} >> "$WINFLEET_ROOT/runs.log"`;
    const content = writeContent(
      [
        {
          name: "slow",
          version: "1",
          metadata: {
            install: { commands: [`${log("one")}; touch "$WINFLEET_ROOT/started"; sleep 2`, log("two"), log("three")] },
          },
        },
      ],
      [{ name: "t", version: "1", packages: ["slow_1"] }],
    );
    const file = join(dir, "agent.json");
    writeConfig(file, { content, template: "t", root, verifyIntervalSeconds: 0 });
    const first = startServe(file);
    await pollUntil(() => existsSync(join(root, "started")), 5000, 25);
    first.child.kill("SIGTERM");
    assert.equal(await first.exit, 0);
    assert.equal(readFileSync(join(root, "runs.log"), "utf8"), "one\n", "it ran past the command it was in");
    const status = JSON.parse((await agent(["status", "--root", root, "--json"])).stdout) as {
      state: string;
      run: { done: number; total: number };
      history: { event: string }[];
    };
    assert.equal(status.state, "applying");
    assert.equal(status.run.done, 2, "the finished command was not recorded done");
    assert.ok(status.history.some((h) => h.event === "interrupted"));

    const second = startServe(file);
    await second.waitFor("apply-converged");
    second.child.kill("SIGTERM");
    await second.exit;
    assert.equal(readFileSync(join(root, "runs.log"), "utf8"), "one\ntwo\nthree\n");
  });
});
