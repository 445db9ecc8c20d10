/**
 * The local fleet end to end, as a user drives it: two hosts converge from a
 * stack file, an edited stack file rolls an upgrade host by host, a host
 * process runs through a host's broker, a failing rollout halts at the first
 * host naming the step and error, and shutdown leaves no process behind. Plus
 * the clear errors: an invalid stack, a state directory owned by another
 * fleet, a busy port.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { type Fleet, REPO, killFleet, processesMentioning, startFleet, winfleet, writeStack } from "./support";
import { tempDir, writeContent } from "../support";

const fleets: Fleet[] = [];
const dirs: string[] = [];
after(() => {
  for (const f of fleets) killFleet(f);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const scratch = (): string => {
  const d = tempDir("fleet-");
  dirs.push(d);
  return d;
};
const up = (args: string[]): Fleet => {
  const f = startFleet(args);
  fleets.push(f);
  return f;
};

describe("winfleet local", () => {
  it("converges two hosts, rolls an edited stack host by host, runs a host process through a broker, and stops leaving nothing", async () => {
    const dir = scratch();
    const stack = join(dir, "Pulumi.e2e.yaml");
    const state = join(dir, "state");
    writeStack(stack, { content: join(REPO, "content"), template: "sandbox", version: "1.0.0", hosts: 2 });
    const fleet = up(["--stack", stack, "--state-dir", state, "--port", "0", "--json"]);
    await fleet.waitFor(/"state":"finished".*"kind":"done"/);
    const status = JSON.parse(winfleet(["local", "status", "--state-dir", state, "--json"]).stdout) as {
      running: boolean;
      hosts: { name: string; state: string; template: { version: string }; reboots: number }[];
    };
    assert.equal(status.running, true);
    assert.deepEqual(
      status.hosts.map((h) => `${h.name} ${h.state} ${h.template.version}`),
      ["local-1 converged 1.0.0", "local-2 converged 1.0.0"],
    );
    assert.ok(
      status.hosts.every((h) => h.reboots === 1),
      "each host reboots once during the sandbox install",
    );
    // What the page and the terminal were told live must agree with the agents' final state.
    const lastViews = new Map<string, { state: string; components: { state: string }[] }>();
    for (const line of fleet.output().split("\n")) {
      if (!line.startsWith('{"type":"host"')) continue;
      const { host } = JSON.parse(line) as { host: { name: string; state: string; components: { state: string }[] } };
      lastViews.set(host.name, host);
    }
    for (const [name, view] of lastViews) {
      assert.equal(view.state, "converged", name);
      assert.deepEqual(
        view.components.map((c) => c.state),
        Array(5).fill("installed"),
        `${name}'s live view`,
      );
    }

    writeStack(stack, { content: join(REPO, "content"), template: "sandbox", version: "1.1.0", hosts: 2 });
    const roll = winfleet(["local", "up", "--stack", stack, "--state-dir", state, "--json"]);
    assert.equal(roll.code, 0, roll.stdout + roll.stderr);
    const started = [...roll.stdout.matchAll(/"rolling (local-\d) to sandbox 1\.1\.0"/g)].map((m) => m[1]);
    assert.deepEqual(started, ["local-1", "local-2"]);
    // One host at a time: local-2 starts only after local-1 converged.
    const lines = roll.stdout.split("\n");
    const converged1 = lines.findIndex(
      (l) => l.includes('"host":"local-1"') && l.includes("converged to sandbox 1.1.0"),
    );
    const start2 = lines.findIndex((l) => l.includes("rolling local-2"));
    assert.ok(converged1 >= 0 && converged1 < start2, "local-2 started rolling before local-1 converged");
    for (const host of ["local-1", "local-2"]) {
      assert.equal(
        readFileSync(join(state, "hosts", host, "root", "winfleet/sandbox/etc/node.env"), "utf8"),
        `FORMAT=2\nNODE=${host}\nGREETING=hello from winfleet\n`,
      );
    }

    // wins's list syntax: space-separated arguments (quotes would be kept in them).
    const exec = winfleet([
      "local",
      "exec",
      "local-2",
      "--state-dir",
      state,
      "--",
      "--path",
      process.execPath,
      "--args",
      "-p process.title.length>0&&require('os').hostname().length>0",
    ]);
    assert.equal(exec.code, 0, exec.stderr);
    assert.equal(exec.stdout, "true\n");
    const logs = winfleet(["local", "logs", "local-1", "--state-dir", state]);
    assert.match(logs.stdout, /apply-converged/);

    const down = winfleet(["local", "down", "--state-dir", state]);
    assert.equal(down.code, 0, down.stderr);
    assert.equal(await fleet.exit, 0);
    assert.deepEqual(processesMentioning(state), [], "processes outlived the fleet");
  });

  it("halts a rollout at the first failing host, naming it, the step and the error", async () => {
    const dir = scratch();
    const content = writeContent(
      [
        { name: "app", version: "1", metadata: { install: { commands: ["true"] }, uninstall: { commands: ["true"] } } },
        {
          name: "app",
          version: "2",
          metadata: {
            install: { commands: ["true"] },
            pre_upgrade: { commands: ["echo 'cannot reach the registry' >&2; exit 7"] },
          },
        },
      ],
      [
        { name: "svc", version: "1", packages: ["app_1"] },
        { name: "svc", version: "2", packages: ["app_2"] },
      ],
    );
    dirs.push(content);
    const stack = join(dir, "Pulumi.halt.yaml");
    const state = join(dir, "state");
    writeStack(stack, { content, template: "svc", version: "1", hosts: 3 });
    const fleet = up(["--stack", stack, "--state-dir", state, "--port", "0", "--json"]);
    await fleet.waitFor(/"state":"finished"/);
    writeStack(stack, { content, template: "svc", version: "2", hosts: 3 });
    const roll = winfleet(["local", "up", "--stack", stack, "--state-dir", state]);
    assert.equal(roll.code, 1);
    assert.match(
      roll.stdout,
      /rollout halted at local-1: app pre_upgrade: echo 'cannot reach the registry' >&2; exit 7: exit 7: cannot reach the registry; not started: local-2, local-3/,
    );
    const status = JSON.parse(winfleet(["local", "status", "--state-dir", state, "--json"]).stdout) as {
      hosts: { name: string; state: string; template?: { version: string } }[];
    };
    assert.deepEqual(
      status.hosts.map((h) => `${h.name} ${h.state} ${h.template?.version ?? "-"}`),
      ["local-1 failed 1", "local-2 converged 1", "local-3 converged 1"],
    );
    assert.equal(winfleet(["local", "down", "--state-dir", state]).code, 0);
    await fleet.exit;
  });

  it("explains an invalid stack file, naming the key path, and starts nothing", () => {
    const dir = scratch();
    const stack = join(dir, "Pulumi.bad.yaml");
    writeStack(stack, { content: join(REPO, "content"), template: "sandbox", version: "1.0.0", hosts: 0 });
    const r = winfleet(["local", "up", "--stack", stack, "--state-dir", join(dir, "state"), "--port", "0"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /Pulumi\.bad\.yaml is invalid:\nerror at winfleet:fleet\.pools\[0\]\.hosts: /);
    assert.deepEqual(processesMentioning(dir), []);
  });

  it("refuses a state directory owned by another stack's running fleet, and a busy port", async () => {
    const dir = scratch();
    const state = join(dir, "state");
    const a = join(dir, "Pulumi.a.yaml");
    const b = join(dir, "Pulumi.b.yaml");
    writeStack(a, { content: join(REPO, "content"), template: "sandbox", version: "1.0.0", hosts: 1 });
    writeStack(b, { content: join(REPO, "content"), template: "sandbox", version: "1.0.0", hosts: 1 });
    const fleet = up(["--stack", a, "--state-dir", state, "--port", "0", "--json"]);
    await fleet.waitFor(/"state":"finished"/);
    const other = winfleet(["local", "up", "--stack", b, "--state-dir", state, "--port", "0"]);
    assert.equal(other.code, 1);
    assert.match(
      other.stderr,
      /is owned by the running fleet of stack a \(pid \d+\); stop it with `winfleet local down`/,
    );

    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", () => resolve()));
    const port = (busy.address() as { port: number }).port;
    const clash = winfleet(["local", "up", "--stack", b, "--state-dir", join(dir, "state-b"), "--port", String(port)]);
    busy.close();
    assert.equal(clash.code, 1);
    assert.match(clash.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use; choose another with --port`));
    assert.equal(winfleet(["local", "down", "--state-dir", state]).code, 0);
    await fleet.exit;
    assert.deepEqual(processesMentioning(dir), []);
  });
});
