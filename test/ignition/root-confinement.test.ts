/**
 * Root confinement: links already in the root (absolute or relative, alone or
 * chained, laid down by an earlier apply or swapped in after planning) and hard
 * link targets with `..` never make the engine write, remove, chmod or link
 * anything outside `--root`. Where CoreOS Ignition confines the same layout,
 * the node lands where it puts it: absolute link targets re-rooted at the root.
 */
import assert from "node:assert/strict";
import {
  chmodSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AgentError } from "../../agent/common/errors";
import { applyIgnition, parseIgnition, rootedMapper } from "../../agent/ignition";
import { executePlan } from "../../agent/ignition/apply";
import { emptyLedger } from "../../agent/ignition/ledger";
import { planApply } from "../../agent/ignition/plan";
import { ledgerPath, removeComponentFiles } from "../../agent/lifecycle/files";
import { stateDir, writeJournal } from "../../agent/lifecycle/journal";
import { verifyHost } from "../../agent/lifecycle/verify";
import type { Recorded } from "../../agent/lifecycle/store";
import { scratchDir, snapshotTree } from "../support";

const work = scratchDir("winfleet-confine-");
let counter = 0;

/** A root and, beside it, an outside tree holding a secret file and a directory. */
function layout(): { root: string; outside: string } {
  const base = join(work, `case-${counter++}`);
  const root = join(base, "root");
  const outside = join(base, "outside");
  mkdirSync(root, { recursive: true });
  mkdirSync(join(outside, "d"), { recursive: true });
  writeFileSync(join(outside, "secret"), "secret");
  chmodSync(join(outside, "secret"), 0o644);
  writeFileSync(join(outside, "d", "keep"), "keep");
  return { root, outside };
}

async function apply(root: string, storage: Record<string, unknown>): Promise<void> {
  const { config } = parseIgnition(JSON.stringify({ ignition: { version: "3.3.0" }, storage }));
  await applyIgnition(config, {
    mapper: rootedMapper(root),
    ledgerPath: join(root, ".winfleet", "ledger.json"),
    durable: false,
  });
}

/** Applies and asserts the outside tree is exactly as it was (bytes, modes, link counts). */
async function applyConfined(root: string, outside: string, storage: Record<string, unknown>): Promise<unknown> {
  const before = snapshotTree(outside);
  let error: unknown;
  try {
    await apply(root, storage);
  } catch (e) {
    error = e;
  }
  assert.deepEqual(snapshotTree(outside), before, "the tree outside the root changed");
  return error;
}

const data = (text: string): Record<string, unknown> => ({ source: `data:,${text}` });

describe("links already in the root stay inside it", () => {
  it("writes a file below an absolute link at the link's target re-rooted at the root", async () => {
    const { root, outside } = layout();
    symlinkSync(outside, join(root, "e"));
    assert.equal(await applyConfined(root, outside, { files: [{ path: "/e/x", contents: data("hi") }] }), undefined);
    assert.equal(readFileSync(join(root, outside, "x"), "utf8"), "hi");
  });

  it("writes a file below a relative link that climbs above the root at the root", async () => {
    const { root, outside } = layout();
    mkdirSync(join(root, "a"));
    symlinkSync("../../outside", join(root, "a", "e"));
    assert.equal(await applyConfined(root, outside, { files: [{ path: "/a/e/x", contents: data("hi") }] }), undefined);
    assert.equal(readFileSync(join(root, "outside", "x"), "utf8"), "hi");
  });

  it("an overwrite entry below a link removes nothing outside the root", async () => {
    const { root, outside } = layout();
    symlinkSync(outside, join(root, "e"));
    assert.equal(await applyConfined(root, outside, { directories: [{ path: "/e/d", overwrite: true }] }), undefined);
    assert.ok(statSync(join(root, outside, "d")).isDirectory());
  });

  it("a mode-only entry below a link chmods nothing outside the root", async () => {
    const { root, outside } = layout();
    symlinkSync(outside, join(root, "e"));
    assert.equal(await applyConfined(root, outside, { files: [{ path: "/e/secret", mode: 0o600 }] }), undefined);
    assert.equal(statSync(join(root, outside, "secret")).mode & 0o7777, 0o600);
  });

  it("a link laid down by one apply is followed inside the root by the next", async () => {
    const { root, outside } = layout();
    assert.equal(await applyConfined(root, outside, { links: [{ path: "/l", target: outside }] }), undefined);
    assert.equal(
      await applyConfined(root, outside, { files: [{ path: "/l/secret", contents: data("new"), overwrite: true }] }),
      undefined,
    );
    assert.equal(readFileSync(join(root, outside, "secret"), "utf8"), "new");
  });

  it("follows a chain of absolute links inside the root (CoreOS follows the second on the host)", async () => {
    const { root, outside } = layout();
    symlinkSync("/b", join(root, "a"));
    symlinkSync(outside, join(root, "b"));
    assert.equal(await applyConfined(root, outside, { files: [{ path: "/a/x", contents: data("hi") }] }), undefined);
    assert.equal(readFileSync(join(root, outside, "x"), "utf8"), "hi");
  });

  it("refuses two entries that meet at one node once links are followed, as Ignition does", async () => {
    const { root, outside } = layout();
    symlinkSync("/b", join(root, "a"));
    const error = await applyConfined(root, outside, {
      files: [
        { path: "/a/x", contents: data("1") },
        { path: "/b/x", contents: data("2") },
      ],
    });
    assert.ok(error instanceof AgentError && /resolves to \/b\/x/.test(error.message), String(error));
  });

  it("makes a root that does not exist yet", async () => {
    const root = join(work, `fresh-${counter++}`, "root");
    await apply(root, { files: [{ path: "/a/x", contents: data("hi") }] });
    assert.equal(readFileSync(join(root, "a", "x"), "utf8"), "hi");
  });

  it("cleans a link's target as text before following it, as Ignition does", async () => {
    const { root, outside } = layout();
    symlinkSync("a/../b", join(root, "a"));
    assert.equal(await applyConfined(root, outside, { directories: [{ path: "/a/c" }] }), undefined);
    assert.ok(statSync(join(root, "b", "c")).isDirectory());
  });

  it("stops at a link loop with an error naming the path", async () => {
    const { root, outside } = layout();
    symlinkSync("/b", join(root, "a"));
    symlinkSync("/a", join(root, "b"));
    const error = await applyConfined(root, outside, { files: [{ path: "/a/x", contents: data("1") }] });
    assert.ok(
      error instanceof AgentError && /storage\.files\[0\]\.path.*links in its parent chain/.test(error.message),
      String(error),
    );
  });

  it("a directory swapped for a link between planning and writing stops the apply", async () => {
    const { root, outside } = layout();
    mkdirSync(join(root, "d"));
    const { config } = parseIgnition(
      JSON.stringify({
        ignition: { version: "3.3.0" },
        storage: {
          files: [{ path: "/d/secret", contents: data("x"), overwrite: true }],
          directories: [{ path: "/d/keep", overwrite: true }],
        },
      }),
    );
    const plan = await planApply(config, new Map(), rootedMapper(root), emptyLedger());
    rmSync(join(root, "d"), { recursive: true });
    symlinkSync(outside, join(root, "d"));
    const before = snapshotTree(outside);
    await assert.rejects(executePlan(plan, false), /since planning; nothing is followed out of the root/);
    assert.deepEqual(snapshotTree(outside), before);
  });
});

describe("hard link targets resolve inside the root", () => {
  it("a target climbing with .. stops at the root and links nothing from outside", async () => {
    const { root, outside } = layout();
    const target = `/..${"/..".repeat(12)}${outside}/secret`;
    const error = await applyConfined(root, outside, { links: [{ path: "/h", target, hard: true }] });
    assert.ok(error instanceof AgentError && /does not exist/.test(error.message), String(error));
    assert.equal(lstatSync(join(outside, "secret")).nlink, 1);
  });

  it("a second apply cannot change an outside file's mode through a hard link", async () => {
    const { root, outside } = layout();
    const target = `/..${"/..".repeat(12)}${outside}/secret`;
    await applyConfined(root, outside, { links: [{ path: "/h", target, hard: true, overwrite: true }] });
    await applyConfined(root, outside, { files: [{ path: "/h", mode: 0o777 }] });
    assert.equal(statSync(join(outside, "secret")).mode & 0o7777, 0o644);
  });

  it("a target below a file fails before anything is written", async () => {
    const { root, outside } = layout();
    writeFileSync(join(root, "f"), "f");
    const before = snapshotTree(root);
    const error = await applyConfined(root, outside, { links: [{ path: "/new/h", target: "/f/x", hard: true }] });
    assert.ok(error instanceof AgentError && /does not exist/.test(error.message), String(error));
    assert.deepEqual(snapshotTree(root), before);
  });

  it("a link to its own path is kept as the same file, or refused before writing when overwrite would remove it", async () => {
    const { root, outside } = layout();
    mkdirSync(join(root, "d"));
    symlinkSync("/l", join(root, "l"));
    assert.equal(await applyConfined(root, outside, { links: [{ path: "/d", target: "/d", hard: true }] }), undefined);
    const before = snapshotTree(root);
    const error = await applyConfined(root, outside, {
      links: [{ path: "/l", target: "/l", hard: true, overwrite: true }],
    });
    assert.ok(error instanceof AgentError && /overwrite removes first/.test(error.message), String(error));
    assert.deepEqual(snapshotTree(root), before);
  });

  it("a target with .. inside the root links the file it names there, as Ignition does", async () => {
    const { root, outside } = layout();
    await applyConfined(root, outside, {
      files: [{ path: "/f", contents: data("f") }],
      links: [{ path: "/h", target: "/a/../../f", hard: true }],
    });
    assert.equal(lstatSync(join(root, "h")).ino, lstatSync(join(root, "f")).ino);
  });
});

describe("hard links already in the root", () => {
  it("a mode change replaces the root's name and leaves the file outside as it was", async () => {
    const { root, outside } = layout();
    chmodSync(join(outside, "secret"), 0o600);
    linkSync(join(outside, "secret"), join(root, "x"));
    await apply(root, { files: [{ path: "/x", mode: 0o6777 }] });
    // Only its link count changes: the root no longer names it.
    assert.equal(statSync(join(outside, "secret")).mode & 0o7777, 0o600);
    assert.equal(lstatSync(join(outside, "secret")).nlink, 1);
    assert.equal(readFileSync(join(outside, "secret"), "utf8"), "secret");
    assert.equal(statSync(join(root, "x")).mode & 0o7777, 0o6777);
    assert.equal(readFileSync(join(root, "x"), "utf8"), "secret");
  });

  it("a file that gains a hard link between planning and the mode change keeps its mode", async () => {
    const { root, outside } = layout();
    writeFileSync(join(root, "x"), "x");
    chmodSync(join(root, "x"), 0o600);
    const storage = { files: [{ path: "/x", mode: 0o4755 }] };
    const { config } = parseIgnition(JSON.stringify({ ignition: { version: "3.3.0" }, storage }));
    const plan = await planApply(
      config,
      new Map([[config.files[0]!, { contents: undefined, append: [] }]]),
      rootedMapper(root),
      emptyLedger(),
    );
    assert.deepEqual(
      plan.operations.map((o) => o.op),
      ["chmod"],
    );
    rmSync(join(root, "x"));
    linkSync(join(outside, "secret"), join(root, "x"));
    const before = snapshotTree(outside);
    await assert.rejects(executePlan(plan, false), /gained another hard link since planning/);
    assert.deepEqual(snapshotTree(outside), before);
  });
});

describe("removing a component's files follows links inside the root", () => {
  it("removes nothing outside the root through a link in a removed path's parents", async () => {
    const { root, outside } = layout();
    symlinkSync(outside, join(root, "opt"));
    const version = {
      name: "app",
      version: "1.0.0",
      metadata: { files: ["/opt/d"] },
      config: parseIgnition('{"ignition":{"version":"3.3.0"}}').config,
      paths: ["/opt/secret"],
    };
    const before = snapshotTree(outside);
    await removeComponentFiles(root, rootedMapper(root), version as unknown as Recorded, new Set());
    assert.deepEqual(snapshotTree(outside), before);
  });

  it("removes what the apply laid down through that link, inside the root", async () => {
    const { root, outside } = layout();
    symlinkSync(outside, join(root, "opt"));
    await apply(root, { files: [{ path: "/opt/app.txt", contents: data("x") }] });
    const version = {
      name: "app",
      version: "1.0.0",
      metadata: { files: [] },
      config: parseIgnition('{"ignition":{"version":"3.3.0"}}').config,
      paths: ["/opt/app.txt"],
    };
    await removeComponentFiles(root, rootedMapper(root), version as unknown as Recorded, new Set());
    assert.throws(() => lstatSync(join(root, outside, "app.txt")), /ENOENT/);
  });
});

describe("drift verification reads what the apply wrote, inside the root", () => {
  it("finds a file written below a link where the apply put it, not outside the root", async () => {
    const { root, outside } = layout();
    symlinkSync(outside, join(root, "opt"));
    const storage = { files: [{ path: "/opt/secret", contents: data("mine"), overwrite: true }] };
    const ignition = JSON.stringify({ ignition: { version: "3.3.0" }, storage });
    const { config } = parseIgnition(ignition);
    await applyIgnition(config, { mapper: rootedMapper(root), ledgerPath: ledgerPath(root), durable: false });
    const recorded = join(stateDir(root), "components", "app_1.0.0");
    mkdirSync(recorded, { recursive: true });
    writeFileSync(join(recorded, "component.ign"), ignition);
    writeFileSync(
      join(recorded, "metadata.json"),
      JSON.stringify({
        name: "app",
        version: "1.0.0",
        install: { priority: 1, commands: [] },
        uninstall: { priority: 1, commands: [] },
      }),
    );
    await writeJournal(root, {
      format: 1,
      installed: [{ name: "app", version: "1.0.0", since: "2026-01-01T00:00:00.000Z" }],
      history: [],
    });
    assert.deepEqual((await verifyHost(root, rootedMapper(root))).items, []);
    assert.equal(readFileSync(join(outside, "secret"), "utf8"), "secret");
  });
});
