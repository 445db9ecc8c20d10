/**
 * The `winfleet-agent ignition` CLI contract other tests and tools rely on:
 * validate exits 0/1 with errors on stderr; apply exits 0 when applied and 1 with
 * a message and nothing written when not.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { tempDir } from "../support";

const agent = join(__dirname, "..", "..", "bin", "winfleet-agent.js");
const run = (...args: string[]) => spawnSync(process.execPath, [agent, ...args], { encoding: "utf8" });
const dir = tempDir("cli-");
const write = (name: string, doc: unknown): string => {
  const file = join(dir, name);
  writeFileSync(file, typeof doc === "string" ? doc : JSON.stringify(doc));
  return file;
};
const good = write("good.ign", {
  ignition: { version: "3.3.0" },
  storage: { files: [{ path: "/etc/app.conf", contents: { source: "data:,x%3D1%0A" }, mode: 0o600 }] },
});
const bad = write("bad.ign", {
  ignition: { version: "3.3.0" },
  storage: { files: [{ path: "/ok", contents: { source: "data:,x" } }, { path: "rel" }] },
});

describe("winfleet-agent ignition", () => {
  it("validate: exit 0 for a valid config", () => {
    const r = run("ignition", "validate", good);
    assert.equal(r.status, 0, r.stderr);
  });

  it("validate: exit 1 with every error and its path on stderr", () => {
    const r = run("ignition", "validate", bad);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /error at storage\.files\[1\]\.path: path not absolute/);
  });

  it("apply: exit 0 and the file is there with its mode", () => {
    const root = tempDir("root-");
    const r = run("ignition", "apply", "--root", root, good);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readFileSync(join(root, "etc", "app.conf"), "utf8"), "x=1\n");
    assert.equal(run("ignition", "apply", "--root", root, good).stdout.split("\n")[0], "changed 0, unchanged 1");
  });

  it("apply: exit 1 and nothing written for an invalid config", () => {
    const root = tempDir("root-");
    const r = run("ignition", "apply", "--root", root, bad);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /path not absolute/);
    assert.deepEqual(readdirSync(root), []);
  });

  it("usage errors exit 2 with help", () => {
    const r = run("ignition", "apply", good);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--root/);
  });
});
