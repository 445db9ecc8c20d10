/**
 * Replacing an output directory: an earlier output of the same shape is
 * swapped out, anything else is refused and left exactly as it was; and the
 * three commands that replace one (content build, render, release) use it.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type OutputShape, assertReplaceable, replaceDirectory } from "../../agent/common/output-dir";
import { scratchDir } from "../support";

const scratch = scratchDir("winfleet-output-dir-");

const shape: OutputShape = {
  what: "a test output",
  marker: "index.json",
  owns: (e) => e.isDirectory() || e.name === "index.json",
};

function dir(name: string, files: Record<string, string>): string {
  const d = join(scratch, name);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(d, rel, ".."), { recursive: true });
    writeFileSync(join(d, rel), text);
  }
  mkdirSync(d, { recursive: true });
  return d;
}

describe("output directories", () => {
  it("replaces nothing, an empty directory, or an earlier output", async () => {
    await assertReplaceable(join(scratch, "absent"), shape);
    await assertReplaceable(dir("empty", {}), shape);
    const target = dir("earlier", { "index.json": "old", "kubernetes/a.yaml": "old" });
    const staged = dir("staged", { "index.json": "new" });
    await replaceDirectory(staged, target, shape);
    assert.deepEqual(readdirSync(target), ["index.json"]);
    assert.equal(readFileSync(join(target, "index.json"), "utf8"), "new");
    assert.ok(!existsSync(staged) && !existsSync(`${staged}.old`));
  });

  const refusals: [string, Record<string, string> | "file", RegExp][] = [
    [
      "a directory holding a file it does not write",
      { "index.json": "", "README.md": "mine" },
      /holds README\.md, which is not part of a test output/,
    ],
    [
      "a directory without the marker",
      { "src/main.ts": "mine" },
      /is not empty and has no index\.json, so it is not a test output written earlier/,
    ],
    ["a file", "file", /is a file, not a directory/],
  ];
  for (const [what, files, message] of refusals) {
    it(`refuses ${what}, and leaves it as it was`, async () => {
      const name = what.replace(/\W+/g, "-");
      let target: string;
      if (files === "file") {
        target = join(scratch, name);
        writeFileSync(target, "mine");
      } else target = dir(name, files);
      const staged = dir(`${name}-staged`, { "index.json": "new" });
      await assert.rejects(
        replaceDirectory(staged, target, shape, "--to"),
        (e: Error) =>
          e.message.startsWith(`--to ${target}: `) &&
          message.test(e.message) &&
          /name a new or empty directory, or remove it first/.test(e.message),
      );
      if (files === "file") assert.equal(readFileSync(target, "utf8"), "mine");
      else for (const [rel, text] of Object.entries(files)) assert.equal(readFileSync(join(target, rel), "utf8"), text);
    });
  }

  it("content build, render and release refuse a directory they did not write", () => {
    const repo = join(__dirname, "..", "..");
    const keep = dir("checkout", { "package.json": "{}", "src/index.ts": "" });
    const key = join(scratch, "release.key");
    writeFileSync(key, generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }));
    const runs: [string, string[]][] = [
      ["content build", ["content", "build", "--content", join(repo, "content"), "--out", keep]],
      ["render", ["render", "--stack", "local", "--out", keep]],
      ["release", ["release", "--key", key, "--out", keep]],
    ];
    for (const [what, args] of runs) {
      const r = spawnSync(process.execPath, [join(repo, "bin", "winfleet.js"), ...args], {
        cwd: repo,
        encoding: "utf8",
        timeout: 120_000,
      });
      assert.equal(r.status, 1, `${what}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /holds (package\.json|src\/), which is not part of a/, what);
    }
    assert.deepEqual(readdirSync(keep).sort(), ["package.json", "src"]);
  });
});
