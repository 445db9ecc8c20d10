/**
 * The engines set-up builds are pinned once, in scripts/engines/engines.json: each version must
 * be the one its Go module requires, and the Pulumi engine and plugins must be the releases of
 * the npm packages the program runs with (the engine runs a plugin of exactly the version the
 * SDK package asks for, and refuses to download one). A module with no version tag of its own
 * (Pulumi's Node.js language host, the `command` provider) is pinned by the pseudo-version of its
 * release's commit: go.mod requires exactly that, go.sum holds its digest, and the pin names the
 * release tag the engine is the build of.
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
    pins?: { module: string; version: string; tag: string; commit: string }[];
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
    for (const pin of engine.pins ?? []) {
      it(`${engine.name}: ${pin.module} is pinned at ${pin.tag}'s commit in go.mod and go.sum`, () => {
        const dir = join(root, "scripts", "engines", engine.module ?? "");
        const gomod = readFileSync(join(dir, "go.mod"), "utf8");
        const required = new RegExp(`^\\s*(?:require\\s+)?${pin.module.replaceAll(".", "\\.")} (v\\S+)`, "m").exec(
          gomod,
        )?.[1];
        assert.equal(required, pin.version);
        // A pseudo-version ends in the commit's first 12 hex digits: the one the release tag names.
        assert.match(pin.version, /^v\d+\.0\.0-\d{14}-[0-9a-f]{12}$/);
        assert.equal(pin.version.slice(-12), pin.commit);
        assert.equal(pin.tag, engine.version, "the engine is the build of the pinned release");
        const sum = readFileSync(join(dir, "go.sum"), "utf8");
        assert.ok(sum.includes(`${pin.module} ${pin.version} h1:`), `go.sum holds ${pin.module}'s digest`);
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
