import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { AgentError } from "../common/errors";
import { type SelectableTemplate, compareVersions, selectTemplate } from "./select";
import { validateContent } from "./validate";

const t = (name: string, version: string, os?: number[]): SelectableTemplate => ({ name, version, ...(os ? { os } : {}) });

const FLEET = [
  t("win2019", "1.0.0", [17763]),
  t("win2019", "1.1.0", [17763]),
  t("win2022", "1.0.0", [20348]),
  t("win2022", "1.10.0", [20348]),
  t("win2022", "1.9.0", [20348]),
  t("win2025", "1.0.0-rc.1", [26100]),
  t("win2025", "1.0.0", [26100]),
  t("rke2-windows", "9.0.0"),
];

function throwsWith(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof AgentError && pattern.test(e.message));
}

describe("compareVersions", () => {
  const ordered = [
    "0.9", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",
    "1.0.0", "1.0.0+build.1", "1.0.0+build.2", "1.0.1", "1.2", "1.9.0", "1.10.0", "v1.34.7", "1.34.7+rke2r1", "1.34.7+rke2r2", "2",
  ];

  it("orders a known list", () => {
    for (let i = 0; i < ordered.length; i++) {
      for (let j = 0; j < ordered.length; j++) {
        const c = compareVersions(ordered[i] as string, ordered[j] as string);
        assert.equal(Math.sign(c), Math.sign(i - j), `${ordered[i]} vs ${ordered[j]}`);
      }
    }
  });

  it("ignores a leading v and missing trailing zeros", () => {
    assert.equal(compareVersions("v1.2.0", "1.2.0"), 0);
    assert.equal(compareVersions("1.2", "1.2.0"), 0);
  });

  it("compares numbers numerically, however long", () => {
    assert.ok(compareVersions("1.20260101000000000001", "1.20260101000000000000") > 0);
    assert.ok(compareVersions("1.10", "1.9") > 0);
  });

  it("is antisymmetric and transitive on generated versions", () => {
    const part = fc.oneof(fc.nat({ max: 30 }).map(String), fc.constantFrom("rc", "alpha", "beta", "x1"));
    const version = fc
      .tuple(fc.array(fc.nat({ max: 30 }).map(String), { minLength: 1, maxLength: 4 }), fc.option(fc.array(part, { minLength: 1, maxLength: 3 })), fc.option(fc.array(part, { minLength: 1, maxLength: 2 })))
      .map(([core, pre, build]) => `${core.join(".")}${pre ? `-${pre.join(".")}` : ""}${build ? `+${build.join(".")}` : ""}`);
    fc.assert(
      fc.property(version, version, version, (a, b, c) => {
        assert.equal(Math.sign(compareVersions(a, b)), -Math.sign(compareVersions(b, a)));
        if (compareVersions(a, b) <= 0 && compareVersions(b, c) <= 0) assert.ok(compareVersions(a, c) <= 0, `${a} <= ${b} <= ${c}`);
      }),
      { seed: 12, numRuns: 2000 },
    );
  });
});

describe("selectTemplate", () => {
  it("takes the newest version of a named template", () => {
    assert.deepEqual(selectTemplate(FLEET, { name: "win2022" }), t("win2022", "1.10.0", [20348]));
    assert.deepEqual(selectTemplate(FLEET, { name: "win2025" }), t("win2025", "1.0.0", [26100]));
  });

  it("takes a pinned version", () => {
    assert.deepEqual(selectTemplate(FLEET, { name: "win2022", version: "1.9.0" }), t("win2022", "1.9.0", [20348]));
  });

  it("takes a named template without an os list on any host", () => {
    assert.equal(selectTemplate(FLEET, { name: "rke2-windows", build: 20348 }).version, "9.0.0");
  });

  it("picks by the host's build when no name is given", () => {
    assert.deepEqual(selectTemplate(FLEET, { build: 17763 }), t("win2019", "1.1.0", [17763]));
    assert.deepEqual(selectTemplate(FLEET, { build: 20348 }), t("win2022", "1.10.0", [20348]));
    assert.deepEqual(selectTemplate(FLEET, { build: 26100 }), t("win2025", "1.0.0", [26100]));
  });

  it("picks the newest across names when several list the build", () => {
    const both = [t("a", "1.0.0", [20348]), t("b", "2.0.0", [17763, 20348])];
    assert.equal(selectTemplate(both, { build: 20348 }).name, "b");
    assert.equal(selectTemplate(both, { build: 17763 }).name, "b");
  });

  it("says which builds the templates cover when none fits", () => {
    throwsWith(() => selectTemplate(FLEET, { build: 14393 }), /no template lists Windows build 14393.*win2019 \(17763\).*win2022 \(20348\).*win2025 \(26100\)/);
    throwsWith(() => selectTemplate([], { build: 14393 }), /there are no templates/);
  });

  it("refuses a named template whose os does not list the host's build", () => {
    throwsWith(() => selectTemplate(FLEET, { name: "win2019", build: 20348 }), /win2019 1\.1\.0 is for Windows builds 17763, not this host's 20348/);
  });

  it("names what exists when the name or version does not", () => {
    throwsWith(() => selectTemplate(FLEET, { name: "win2016" }), /no template named "win2016"; available: rke2-windows, win2019, win2022, win2025/);
    throwsWith(() => selectTemplate(FLEET, { name: "win2022", version: "3.0.0" }), /no version 3\.0\.0; available: 1\.10\.0, 1\.9\.0, 1\.0\.0/);
  });

  it("needs a name or a build", () => {
    throwsWith(() => selectTemplate(FLEET, {}), /no template named and no Windows build/);
  });

  it("refuses a tie between two templates at the same newest version", () => {
    throwsWith(() => selectTemplate([t("a", "1.0.0", [20348]), t("b", "1.0", [20348])], { build: 20348 }), /several templates fit Windows build 20348.*a 1\.0\.0, b 1\.0.*name one/);
  });

  it("selects from the shipped content by build", async () => {
    const { templates } = await validateContent(join(__dirname, "..", "..", "content"));
    for (const [build, name] of [[17763, "win2019"], [20348, "win2022"], [26100, "win2025"]] as const) {
      assert.equal(selectTemplate(templates, { build }).name, name);
    }
  });
});
