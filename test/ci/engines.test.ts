/**
 * The engines set-up builds are pinned once, in scripts/engines/engines.json: each version must
 * be the one its Go module requires, and the Pulumi engine and plugins must be the releases of
 * the npm packages the program runs with (the engine runs a plugin of exactly the version the
 * SDK package asks for, and refuses to download one).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { projectRoot } from "../../agent/common/project-root";

const root = projectRoot();
const manifest = JSON.parse(readFileSync(join(root, "scripts", "engines", "engines.json"), "utf8")) as {
  engines: {
    name: string;
    version: string;
    module?: string;
    versionOf?: string;
    npm?: string;
    copyModule?: string;
    replace?: string[];
  }[];
};
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string }>;
};
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

describe("engine pins", () => {
  for (const engine of manifest.engines) {
    if (engine.module && engine.versionOf) {
      it(`${engine.name}: ${engine.versionOf} ${engine.version} is what its go.mod requires`, () => {
        const gomod = readFileSync(join(root, "scripts", "engines", engine.module ?? "", "go.mod"), "utf8");
        const required = new RegExp(
          `^\\s*(?:require\\s+)?${engine.versionOf?.replaceAll(".", "\\.")} (v\\S+)`,
          "m",
        ).exec(gomod)?.[1];
        assert.equal(required, engine.version);
      });
    }
    if (engine.npm) {
      it(`${engine.name} ${engine.version} is the release of ${engine.npm} in package-lock.json, pinned exactly`, () => {
        assert.equal(`v${lock.packages[`node_modules/${engine.npm}`]?.version ?? "?"}`, engine.version);
        if (engine.name !== "pulumi")
          assert.equal(
            pkg.dependencies[engine.npm ?? ""],
            engine.version.replace(/^v/, ""),
            "an exact version: a caret would let npm move past the plugin set-up builds",
          );
      });
    }
    if (engine.copyModule) {
      it(`${engine.name}: its sibling replacements name the same release`, () => {
        for (const r of engine.replace ?? []) assert.match(r, new RegExp(`@${engine.version.replaceAll(".", "\\.")}$`));
      });
    }
  }
});

describe("the Pulumi packages", () => {
  it("are pinned exactly, each at the release package-lock.json holds: the SDK, providers and policy SDK are one tested set", () => {
    const all = { ...pkg.dependencies, ...pkg.devDependencies };
    const pulumi = Object.entries(all).filter(([name]) => name.startsWith("@pulumi/"));
    assert.ok(pulumi.length >= 5);
    for (const [name, range] of pulumi)
      assert.equal(range, lock.packages[`node_modules/${name}`]?.version, `${name}: ${range}`);
  });
});
