/**
 * The content build over real files: deterministic output, a manifest whose
 * digests match, large files shipped and applied through bundle:///, and
 * validation that reports every problem.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { buildContent } from "../../agent/content/build";
import { loadComponent } from "../../agent/content/load";
import { validateContent } from "../../agent/content/validate";
import { applyIgnition, rootedMapper } from "../../agent/ignition";
import { tempDir } from "../support";

const repoContent = join(__dirname, "..", "..", "content");
const tmp = (): string => tempDir("content-");
const listAll = (dir: string, rel = ""): string[] =>
  readdirSync(join(dir, rel), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listAll(dir, join(rel, e.name)) : [join(rel, e.name)]))
    .sort();

describe("content build", () => {
  it("is deterministic and its manifest's digests match the files", async () => {
    const a = join(tmp(), "a");
    const b = join(tmp(), "b");
    const manifest = await buildContent(repoContent, a);
    await buildContent(repoContent, b);
    assert.deepEqual(listAll(a), listAll(b));
    for (const f of listAll(a)) assert.ok(readFileSync(join(a, f)).equals(readFileSync(join(b, f))), f);
    for (const art of [...manifest.templates, ...manifest.components, ...manifest.files]) {
      assert.equal(
        createHash("sha256")
          .update(readFileSync(join(a, art.path)))
          .digest("hex"),
        art.sha256,
        art.path,
      );
    }
    assert.deepEqual(
      manifest.templates.map((t) => `${t.name}@${t.version}`).filter((t) => t.startsWith("sandbox@")),
      ["sandbox@1.0.0", "sandbox@1.1.0", "sandbox@1.2.0"],
    );
  });

  it("builds the sandbox template's components, each carrying its metadata", async () => {
    const out = join(tmp(), "bundle");
    const manifest = await buildContent(repoContent, out);
    assert.deepEqual(
      manifest.components.map((c) => `${c.name}_${c.version}`).filter((c) => c.startsWith("sandbox-")),
      [
        "sandbox-config_1.0.0",
        "sandbox-config_2.0.0",
        "sandbox-feature_1.0.0",
        "sandbox-legacy_1.0.0",
        "sandbox-service_1.0.0",
        "sandbox-service_1.1.0",
        "sandbox-state_1.0.0",
        "sandbox-state_2.0.0",
      ],
    );
    const { value } = await loadComponent(
      readFileSync(join(out, "components", "sandbox-state_2.0.0.ign"), "utf8"),
      "state",
    );
    assert.equal(value.metadata.post_upgrade.commands.length, 1);
  });

  it("ships large files in the bundle and applies them through bundle:/// with their hash", async () => {
    const content = tmp();
    cpSync(repoContent, content, { recursive: true });
    const big = Buffer.alloc(200_000, 7);
    mkdirSync(join(content, "components", "sandbox-config", "1.0.0", "files", "k"), { recursive: true });
    writeFileSync(join(content, "components", "sandbox-config", "1.0.0", "files", "k", "big.bin"), big);
    const out = join(tmp(), "bundle");
    const manifest = await buildContent(content, out);
    assert.deepEqual(
      manifest.files.map((f) => f.path),
      ["components/sandbox-config/1.0.0/files/k/big.bin"],
    );
    const { value } = await loadComponent(
      readFileSync(join(out, "components", "sandbox-config_1.0.0.ign"), "utf8"),
      "config",
      { bundleRoot: out },
    );
    const root = tmp();
    await applyIgnition(value.config, { mapper: rootedMapper(root), bundleRoot: out });
    assert.ok(readFileSync(join(root, "k", "big.bin")).equals(big));
  });

  it("validation reports every problem, not just the first", async () => {
    const content = tmp();
    cpSync(repoContent, content, { recursive: true });
    writeFileSync(
      join(content, "templates", "broken.json"),
      JSON.stringify({
        name: "broken",
        version: "1",
        packages: ["sandbox-state_9.9.9", "nothing_1.0", "sandbox-state_1.0.0", "bad ref"],
      }),
    );
    writeFileSync(
      join(content, "templates", "dup.json"),
      readFileSync(join(content, "templates", "sandbox-1.0.0.json")),
    );
    const meta = join(content, "components", "sandbox-service", "1.0.0", "metadata.json");
    writeFileSync(meta, readFileSync(meta, "utf8").replace('"name": "sandbox-service"', '"name": "heartbeat"'));
    mkdirSync(join(content, "components", "empty", "0.1"), { recursive: true });
    const { problems } = await validateContent(content);
    const lines = problems.map((p) => `${p.path}: ${p.message}`);
    for (const expected of [
      /templates\/broken\.json: packages\[3\]: expected <component>_<version>/,
      /components\/sandbox-service\/1\.0\.0\/metadata\.json: name: is "heartbeat"/,
      /components\/empty\/0\.1\/metadata\.json: missing/,
      /templates\/(dup|sandbox-1\.0\.0)\.json: duplicates template sandbox 1\.0\.0/,
    ])
      assert.ok(
        lines.some((l) => expected.test(l)),
        `${String(expected)} not in:\n${lines.join("\n")}`,
      );
    // The packages problems need the template to parse; with the bad ref fixed they all appear.
    writeFileSync(
      join(content, "templates", "broken.json"),
      JSON.stringify({
        name: "broken",
        version: "1",
        packages: ["sandbox-state_9.9.9", "nothing_1.0", "sandbox-state_1.0.0"],
      }),
    );
    const again = (await validateContent(content)).problems.map((p) => `${p.path}: ${p.message}`);
    assert.ok(
      again.some((l) => /packages\[0\]: sandbox-state_9\.9\.9 does not exist; available: 1\.0\.0, 2\.0\.0/.test(l)),
      again.join("\n"),
    );
    assert.ok(again.some((l) => /packages\[1\]: nothing_1\.0 does not exist; no such component/.test(l)));
    assert.ok(again.some((l) => /packages\[2\]: names sandbox-state again/.test(l)));
  });

  it("the CLI exits 1 on invalid content and builds nothing", () => {
    const content = tmp();
    cpSync(repoContent, content, { recursive: true });
    writeFileSync(join(content, "templates", "broken.json"), "{");
    const cli = join(__dirname, "..", "..", "bin", "winfleet.js");
    const out = join(tmp(), "never");
    const v = spawnSync(process.execPath, [cli, "content", "validate", "--content", content], { encoding: "utf8" });
    assert.equal(v.status, 1);
    assert.match(v.stderr, /templates\/broken\.json: not valid JSON/);
    const b = spawnSync(process.execPath, [cli, "content", "build", "--content", content, "--out", out], {
      encoding: "utf8",
    });
    assert.equal(b.status, 1);
    assert.throws(() => readdirSync(out));
  });
});
