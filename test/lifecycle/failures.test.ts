/**
 * What goes wrong, through the real CLI: a failing command, a timeout, stderr
 * that is not a failure, secrets in output, the lock, and every kind of bad
 * input — each with a clear message and nothing changed.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { agent, exitOf, hostTree, pollUntil, tempDir, writeContent } from "../support";

const roots: string[] = [];
const fresh = (): string => {
  const r = tempDir("lifecycle-root-");
  roots.push(r);
  return r;
};
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

interface Status {
  state: string;
  failure?: {
    component: string;
    phase: string;
    command: string;
    exitCode: number | null;
    timedOut: boolean;
    errorTail: string;
  };
  components: { name: string; version: string; state: string }[];
}
const status = async (root: string): Promise<Status> =>
  JSON.parse((await agent(["status", "--root", root, "--json"])).stdout) as Status;

describe("a failing step", () => {
  const content = writeContent(
    [
      { name: "ok", version: "1", metadata: { install: { commands: ["echo fine"] } } },
      {
        name: "bad",
        version: "1",
        metadata: { install: { commands: ["echo 'about to fail' >&2; echo 'disk full' >&2; exit 3", "echo never"] } },
      },
      { name: "later", version: "1", metadata: { install: { priority: 200, commands: ["echo later"] } } },
    ],
    [{ name: "t", version: "1", packages: ["ok_1", "bad_1", "later_1"] }],
  );

  it("stops the apply, prints and keeps the component, phase, command, exit code and error tail", async () => {
    const root = fresh();
    const r = await agent(["apply", "--content", content, "--template", "t", "--root", root]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /apply failed at step \d+: bad 1, phase install/);
    assert.match(r.stderr, /exit code: 3/);
    assert.match(r.stderr, /disk full/);
    const s = await status(root);
    assert.equal(s.state, "failed");
    const f = s.failure;
    assert.deepEqual(
      f && { component: f.component, phase: f.phase, command: f.command, exitCode: f.exitCode, timedOut: f.timedOut },
      {
        component: "bad",
        phase: "install",
        command: "echo 'about to fail' >&2; echo 'disk full' >&2; exit 3",
        exitCode: 3,
        timedOut: false,
      },
    );
    assert.match(s.failure?.errorTail ?? "", /about to fail\ndisk full/);
    assert.deepEqual(
      s.components.map((c) => `${c.name} ${c.state}`),
      ["ok installed", "bad installing", "later installing"],
    );
  });

  it("resumes at the failed step once it can succeed, running nothing that finished again", async () => {
    const root = fresh();
    const flag = join(root, "fixed");
    const c = writeContent(
      [
        {
          name: "first",
          version: "1",
          metadata: { install: { commands: ['echo run >> "$WINFLEET_ROOT/first.log"'] } },
        },
        {
          name: "flaky",
          version: "1",
          metadata: { install: { commands: ['test -f "$WINFLEET_ROOT/fixed" || exit 9'] } },
        },
      ],
      [{ name: "t", version: "1", packages: ["first_1", "flaky_1"] }],
    );
    assert.equal((await agent(["apply", "--content", c, "--template", "t", "--root", root])).code, 1);
    writeFileSync(flag, "");
    const again = await agent(["apply", "--content", c, "--template", "t", "--root", root]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(readFileSync(join(root, "first.log"), "utf8"), "run\n");
    assert.equal((await status(root)).state, "converged");
  });
});

describe("commands", () => {
  it("are killed with everything they started when they outlive timeout_seconds, and the failure says so", async () => {
    const root = fresh();
    const c = writeContent(
      [
        {
          name: "slow",
          version: "1",
          metadata: {
            timeout_seconds: 1,
            install: { commands: ['sleep 30 & echo $! > "$WINFLEET_ROOT/child.pid"; sleep 30'] },
          },
        },
      ],
      [{ name: "t", version: "1", packages: ["slow_1"] }],
    );
    const started = Date.now();
    const r = await agent(["apply", "--content", c, "--template", "t", "--root", root]);
    assert.equal(r.code, 1);
    assert.ok(Date.now() - started < 15_000, "the timeout did not stop the command");
    assert.match(r.stderr, /timed out/);
    const s = await status(root);
    assert.equal(s.failure?.timedOut, true);
    assert.equal(s.failure?.exitCode, null);
    const pid = Number(readFileSync(join(root, "child.pid"), "utf8"));
    const alive = existsSync(`/proc/${pid}`) && !/\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
    assert.equal(alive, false, "the command's child survived");
  });

  it("succeed when they write to stderr but exit 0", async () => {
    const root = fresh();
    const c = writeContent(
      [{ name: "noisy", version: "1", metadata: { install: { commands: ["echo 'warning: deprecated flag' >&2"] } } }],
      [{ name: "t", version: "1", packages: ["noisy_1"] }],
    );
    const r = await agent(["apply", "--content", c, "--template", "t", "--root", root]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await status(root)).state, "converged");
  });

  it("get secrets as values but never show them: output, journal and logs are masked", async () => {
    const root = fresh();
    const secret = "s3cr3t-t0ken-value";
    const config = join(root, "agent.json");
    const c = writeContent(
      [
        {
          name: "join",
          version: "1",
          metadata: {
            variables: { JOIN_TOKEN: { secret: true } },
            install: {
              commands: [
                'test "${#JOIN_TOKEN}" -eq 18 && echo "token is $JOIN_TOKEN" && echo "again $JOIN_TOKEN" >&2 && exit 4',
              ],
            },
          },
        },
      ],
      [{ name: "t", version: "1", packages: ["join_1"] }],
    );
    writeFileSync(config, JSON.stringify({ content: c, template: "t", root, secrets: { JOIN_TOKEN: secret } }));
    const r = await agent(["apply", "--config", config]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /again \*\*\*/);
    const everything = [r.stdout, r.stderr, readFileSync(join(root, ".winfleet", "journal.json"), "utf8")];
    const logs = join(root, ".winfleet", "logs");
    for (const run of readdirSync(logs))
      for (const f of readdirSync(join(logs, run))) everything.push(readFileSync(join(logs, run, f), "utf8"));
    assert.ok(everything.length > 3, "no step log was written");
    for (const text of everything) assert.equal(text.includes(secret), false, "a secret leaked");
  });
});

describe("the apply lock", () => {
  it("refuses a second apply while one runs, naming the holder", async () => {
    const root = fresh();
    const c = writeContent(
      [
        {
          name: "long",
          version: "1",
          metadata: { install: { commands: ['touch "$WINFLEET_ROOT/started"; sleep 3'] } },
        },
      ],
      [{ name: "t", version: "1", packages: ["long_1"] }],
    );
    const first = agent(["apply", "--content", c, "--template", "t", "--root", root]);
    await pollUntil(() => existsSync(join(root, "started")), 5000);
    const second = await agent(["apply", "--content", c, "--template", "t", "--root", root]);
    assert.equal(second.code, 1);
    assert.match(second.stderr, /another winfleet-agent holds .*lock: pid \d+ \(winfleet-agent apply\)/);
    assert.equal((await first).code, 0);
  });

  it("takes over a lock whose holder is dead", async () => {
    const root = fresh();
    const c = writeContent(
      [{ name: "a", version: "1", metadata: { install: { commands: ["true"] } } }],
      [{ name: "t", version: "1", packages: ["a_1"] }],
    );
    const dead = spawn("true");
    await exitOf(dead);
    mkdirSync(join(root, ".winfleet"), { recursive: true });
    writeFileSync(
      join(root, ".winfleet", "lock"),
      JSON.stringify({
        pid: dead.pid,
        identity: "1",
        command: "winfleet-agent apply",
        host: hostname(),
        since: "2026-01-01T00:00:00Z",
      }),
    );
    const r = await agent(["apply", "--content", c, "--template", "t", "--root", root]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(existsSync(join(root, ".winfleet", "lock")), false, "the lock was not released");
  });
});

describe("bad input changes nothing", () => {
  const good = writeContent(
    [{ name: "a", version: "1", metadata: { install: { commands: ['echo hi > "$WINFLEET_ROOT/a"'] } } }],
    [{ name: "t", version: "1", packages: ["a_1"] }],
  );

  const cases: {
    name: string;
    args: (root: string) => string[];
    setup?: (root: string) => void;
    message: RegExp;
    code?: number;
  }[] = [
    {
      name: "an unknown template",
      args: (root) => ["--content", good, "--template", "nope", "--root", root],
      message: /no template named "nope".*available: t/,
    },
    {
      name: "an unknown template version",
      args: (root) => ["--content", good, "--template", "t@9", "--root", root],
      message: /template t has no version 9.*available: 1/,
    },
    {
      name: "a template naming a missing component",
      args: (root) => [
        "--content",
        writeContent([], [{ name: "t", version: "1", packages: ["ghost_2"] }]),
        "--template",
        "t",
        "--root",
        root,
      ],
      message: /names components that are not in .*: ghost_2/,
    },
    {
      name: "unreadable metadata",
      args: (root) => {
        const c = writeContent([{ name: "a", version: "1" }], [{ name: "t", version: "1", packages: ["a_1"] }]);
        writeFileSync(join(c, "components", "a", "1", "metadata.json"), "{ not json");
        return ["--content", c, "--template", "t", "--root", root];
      },
      message: /metadata\.json.*not valid JSON/s,
    },
    {
      name: "a corrupt journal",
      setup: (root) => {
        mkdirSync(join(root, ".winfleet"), { recursive: true });
        writeFileSync(join(root, ".winfleet", "journal.json"), '{"format": 1, "installed": "oops"');
      },
      args: (root) => ["--content", good, "--template", "t", "--root", root],
      message: /the journal .*journal\.json is corrupt: .*Nothing was changed/,
    },
    {
      name: "a missing content directory",
      args: (root) => ["--content", join(root, "nowhere"), "--template", "t", "--root", root],
      message: /is not a content directory/,
    },
    {
      name: "a required variable without a value",
      args: (root) => [
        "--content",
        writeContent(
          [
            {
              name: "a",
              version: "1",
              metadata: { variables: { API_URL: { description: "the API server" } }, install: { commands: ["true"] } },
            },
          ],
          [{ name: "t", version: "1", packages: ["a_1"] }],
        ),
        "--template",
        "t",
        "--root",
        root,
      ],
      message: /required variables have no value.*a 1 needs API_URL \(the API server\)/s,
    },
    {
      name: "no content at all (usage)",
      args: (root) => ["--template", "t", "--root", root],
      message: /apply needs --content/,
      code: 2,
    },
    {
      name: "an unknown option (usage)",
      args: (root) => ["--content", good, "--root", root, "--frobnicate"],
      message: /unknown option '--frobnicate'/,
      code: 2,
    },
  ];
  for (const c of cases) {
    it(`: ${c.name}`, async () => {
      const root = fresh();
      c.setup?.(root);
      const before = hostTree(root, () => false);
      const journal = existsSync(join(root, ".winfleet", "journal.json"))
        ? readFileSync(join(root, ".winfleet", "journal.json"), "utf8")
        : undefined;
      const r = await agent(["apply", ...c.args(root)]);
      assert.equal(r.code, c.code ?? 1, r.stdout + r.stderr);
      assert.match(r.stderr, c.message);
      assert.deepEqual(hostTree(root), before, "the host changed");
      const after = existsSync(join(root, ".winfleet", "journal.json"))
        ? readFileSync(join(root, ".winfleet", "journal.json"), "utf8")
        : undefined;
      assert.equal(after, journal, "the journal changed");
    });
  }
});
