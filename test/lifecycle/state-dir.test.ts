/**
 * The agent's state directory is inside the boundary, through the real CLI: a
 * config may not reach `<root>/.winfleet`; a state directory (or a directory in
 * it) that is a link, or another user's, is refused with an error naming it and
 * nothing is written or removed through it; files planted in it as links or
 * hard links to files outside the root are replaced or refused, never written
 * through; loose permissions are made private.
 */
import assert from "node:assert/strict";
import {
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AgentError, agentStateDir } from "../../agent/common";
import { agent, scratchDir, snapshotTree, writeContent } from "../support";

const work = scratchDir("winfleet-state-dir-");
let n = 0;

/** A root, and beside it a victim tree the agent must never touch. */
function layout(): { root: string; victim: string; base: string } {
  const base = join(work, `case-${n++}`);
  const root = join(base, "root");
  const victim = join(base, "victim");
  mkdirSync(join(victim, "important"), { recursive: true });
  mkdirSync(root, { recursive: true });
  writeFileSync(join(victim, "important", "data.txt"), "data");
  writeFileSync(join(victim, "notes.txt"), "notes");
  chmodSync(join(victim, "notes.txt"), 0o600);
  return { root, victim, base };
}

const content = writeContent(
  [
    {
      name: "c1",
      version: "1.0.0",
      files: { "/opt/c1/app.txt": "app" },
      metadata: { install: { commands: ["echo installed"] } },
    },
  ],
  [{ name: "t", version: "1.0.0", packages: ["c1_1.0.0"] }],
);

const apply = (root: string) => agent(["apply", "--content", content, "--template", "t", "--root", root]);

function ignitionConfig(base: string, storage: Record<string, unknown>): string {
  const file = join(base, `config-${n++}.ign`);
  writeFileSync(file, JSON.stringify({ ignition: { version: "3.3.0" }, storage }));
  return file;
}

describe("configs never reach the state directory", () => {
  it("refuses a config that makes /.winfleet a link, and writes no ledger through it", async () => {
    const { root, victim, base } = layout();
    const before = snapshotTree(victim);
    const config = ignitionConfig(base, { links: [{ path: "/.winfleet", target: victim }] });
    const r = await agent(["ignition", "apply", "--root", root, config]);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stderr, /\/\.winfleet\): resolves into the agent's state directory/);
    assert.deepEqual(snapshotTree(victim), before);
    assert.ok(!existsSync(join(victim, "ignition-ledger.json")));
  });

  it("refuses paths that reach it by another spelling or through a link, and hard links to its files", async () => {
    const { root, base } = layout();
    const r0 = await apply(root);
    assert.equal(r0.code, 0, r0.stderr);
    symlinkSync("/.winfleet", join(root, "x"));
    for (const storage of [
      { files: [{ path: "/.WinFleet/journal.json", contents: { source: "data:,x" }, overwrite: true }] },
      { files: [{ path: "/x/journal.json", contents: { source: "data:,x" }, overwrite: true }] },
      { directories: [{ path: "/.winfleet/components", overwrite: true }] },
      { links: [{ path: "/key", target: "/.winfleet/lock-key", hard: true }] },
    ]) {
      const before = snapshotTree(join(root, ".winfleet"));
      const r = await agent(["ignition", "apply", "--root", root, ignitionConfig(base, storage)]);
      assert.equal(r.code, 1, JSON.stringify(storage));
      assert.match(r.stderr, /state directory/);
      assert.deepEqual(snapshotTree(join(root, ".winfleet")), before, JSON.stringify(storage));
    }
    assert.ok(!existsSync(join(root, "key")));
  });
});

describe("a state directory that is not the agent's own", () => {
  it("refuses components linked to a victim, and removes none of its entries", async () => {
    const { root, victim } = layout();
    mkdirSync(join(root, ".winfleet"), { mode: 0o700 });
    symlinkSync(victim, join(root, ".winfleet", "components"));
    const before = snapshotTree(victim);
    const r = await apply(root);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\.winfleet\/components is a symbolic link or junction/);
    assert.deepEqual(snapshotTree(victim), before);
  });

  it("refuses a state directory that is a link, creating nothing where it points", async () => {
    const { root, victim } = layout();
    symlinkSync(victim, join(root, ".winfleet"));
    const before = snapshotTree(victim);
    for (const args of [
      ["apply", "--content", content, "--template", "t", "--root", root],
      ["status", "--root", root],
      ["uninstall", "--root", root],
    ]) {
      const r = await agent(args);
      assert.notEqual(r.code, 0, args.join(" "));
      assert.match(
        r.stderr,
        /\.winfleet is a symbolic link or junction: the agent keeps its state only in a real directory/,
      );
    }
    assert.deepEqual(snapshotTree(victim), before);
  });

  it(
    "refuses a state directory owned by another user, naming the owner",
    { skip: process.getuid?.() !== 0 && "needs root to give a directory away" },
    async () => {
      const { root } = layout();
      mkdirSync(join(root, ".winfleet"), { mode: 0o700 });
      chownSync(join(root, ".winfleet"), 65534, 65534);
      const r = await apply(root);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /\.winfleet is owned by uid 65534, not by the agent's user \(uid 0\)/);
      assert.ok(!existsSync(join(root, "opt")), "nothing was applied");
    },
  );

  it("on Windows, uses no state directory it could not make private (here, where no powershell.exe reads its ACL)", () => {
    const { root } = layout();
    // The Windows defaults (state-acl.win32.ts) run for a win32 host; their rules are agent/common/state-acl.test.ts's.
    assert.throws(
      () => agentStateDir(root, { platform: "win32" }).useSync(() => assert.fail("used")),
      (e: unknown) => e instanceof AgentError && /cannot make .*\.winfleet private: .*powershell\.exe/.test(e.message),
    );
  });

  it("makes a state directory others may read private", async () => {
    const { root } = layout();
    mkdirSync(join(root, ".winfleet", "logs"), { recursive: true });
    chmodSync(join(root, ".winfleet"), 0o777);
    chmodSync(join(root, ".winfleet", "logs"), 0o755);
    const r = await apply(root);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(statSync(join(root, ".winfleet")).mode & 0o777, 0o700);
    assert.equal(statSync(join(root, ".winfleet", "logs")).mode & 0o777, 0o700);
  });
});

describe("files planted in the state directory", () => {
  const planted = ["journal.json", "lock", "lock-key", "ignition-ledger.json", "accepted-versions.json"];
  for (const name of planted) {
    it(`writes nothing through ${name} as a link to a file outside`, async () => {
      const { root, victim } = layout();
      mkdirSync(join(root, ".winfleet"), { mode: 0o700 });
      symlinkSync(join(victim, "notes.txt"), join(root, ".winfleet", name));
      const before = snapshotTree(victim);
      await apply(root);
      assert.deepEqual(snapshotTree(victim), before);
    });
  }

  // (The report queue and the broker's records, which serve writes, are covered by the confinement property.)
  for (const dir of ["logs", "components"]) {
    it(`writes nothing through ${dir} as a link to a directory outside`, async () => {
      const { root, victim } = layout();
      mkdirSync(join(root, ".winfleet"), { mode: 0o700 });
      symlinkSync(victim, join(root, ".winfleet", dir));
      const before = snapshotTree(victim);
      await apply(root);
      assert.deepEqual(snapshotTree(victim), before);
    });
  }

  it("appends nothing to a ledger that is a hard link to a file outside: it is replaced", async () => {
    const { root, victim } = layout();
    const r0 = await apply(root);
    assert.equal(r0.code, 0, r0.stderr);
    const ledger = join(root, ".winfleet", "ignition-ledger.json");
    writeFileSync(join(victim, "ledger-copy"), readFileSync(ledger));
    const { rmSync } = await import("node:fs");
    rmSync(ledger);
    linkSync(join(victim, "ledger-copy"), ledger);
    const before = readFileSync(join(victim, "ledger-copy"));
    const base = join(root, "..");
    const r = await agent([
      "ignition",
      "apply",
      "--root",
      root,
      ignitionConfig(base, { files: [{ path: "/more.txt", contents: { source: "data:,more" } }] }),
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readFileSync(join(victim, "ledger-copy")), before);
    assert.equal(statSync(ledger).nlink, 1);
  });
});

describe("a component's metadata files", () => {
  it("never include the state directory: uninstalling such a component removes none of it", async () => {
    const { root } = layout();
    const evil = writeContent(
      [{ name: "evil", version: "1.0.0", metadata: { files: ["/.winfleet"], install: { commands: ["true"] } } }],
      [{ name: "t", version: "1.0.0", packages: ["evil_1.0.0"] }],
    );
    const r0 = await agent(["apply", "--content", evil, "--template", "t", "--root", root]);
    assert.equal(r0.code, 0, r0.stderr);
    const r = await agent(["uninstall", "--root", root]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\/\.winfleet: lies in the agent's state directory/);
    assert.ok(existsSync(join(root, ".winfleet", "journal.json")));
  });
});
