import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { join } from "node:path";
import { type Catalog, loadCatalog } from "../content/catalog";
import { templateSchema } from "../content/schema";
import { compareVersions, pickTemplate, resolveTarget, windowsBuild } from "./target";

const catalog = (templates: { name: string; version: string; os?: number[] }[]): Catalog => ({
  dir: "/content",
  layout: "source",
  templates: templates.map((t) => templateSchema.parse({ ...t, packages: ["a_1"] })),
  components: new Map(),
  digest: "",
});

describe("choosing a template", () => {
  const c = catalog([
    { name: "win2019", version: "1.0.0", os: [17763] },
    { name: "win2022", version: "1.0.0", os: [20348] },
    { name: "win2022", version: "1.10.0", os: [20348] },
    { name: "win2022", version: "1.9.0", os: [20348] },
    { name: "win2025", version: "1.0.0", os: [26100] },
    { name: "win2019-rke2", version: "1.0.0", os: [17763] },
  ]);

  it("compares versions numerically, segment by segment", () => {
    assert.ok(compareVersions("1.10.0", "1.9.0") > 0);
    assert.ok(compareVersions("v2", "v1.99") > 0);
    assert.equal(compareVersions("1.0.0", "1.0.0"), 0);
    assert.ok(compareVersions("1.0", "1.0.1") < 0);
  });

  it("takes the newest version of a named template, or the version asked for", () => {
    assert.equal(pickTemplate(c, { name: "win2022" }).version, "1.10.0");
    assert.equal(pickTemplate(c, { name: "win2022", version: "1.9.0" }).version, "1.9.0");
    assert.throws(
      () => pickTemplate(c, { name: "win2022", version: "2.0.0" }),
      /has no version 2\.0\.0.*available: 1\.10\.0, 1\.9\.0, 1\.0\.0/,
    );
    assert.equal(pickTemplate(c, { name: "win2022", build: 20348 }).version, "1.10.0");
    assert.throws(
      () => pickTemplate(c, { name: "win2019", build: 20348 }),
      /template win2019 1\.0\.0 is for Windows builds 17763, and this host is build 20348/,
    );
    assert.throws(
      () => pickTemplate(c, { name: "win2016" }),
      /no template named "win2016".*available: win2019, win2019-rke2, win2022, win2025/,
    );
  });

  it("picks by the host's Windows build when no name is given, and says clearly when none or several fit", () => {
    assert.equal(pickTemplate(c, { build: 20348 }).name, "win2022");
    assert.equal(pickTemplate(c, { build: 20348 }).version, "1.10.0");
    assert.equal(pickTemplate(c, { build: 26100 }).name, "win2025");
    assert.throws(
      () => pickTemplate(c, { build: 14393 }),
      /no template lists Windows build 14393 in its os; the templates cover: win2019 1\.0\.0: 17763; .*win2025 1\.0\.0: 26100/,
    );
    assert.throws(
      () => pickTemplate(c, { build: 17763 }),
      /several templates fit Windows build 17763 \(win2019, win2019-rke2\): name one/,
    );
    const experimental = {
      ...c,
      templates: c.templates.map((t) => (t.name === "win2025" ? { ...t, experimental: true } : t)),
    };
    assert.throws(
      () => pickTemplate(experimental, { build: 26100 }),
      /only experimental templates list Windows build 26100 \(win2025 1\.0\.0\): name one with --template/,
    );
    assert.equal(pickTemplate(experimental, { name: "win2025", build: 26100 }).name, "win2025");
    assert.throws(() => pickTemplate(c, {}), /no template named, and this host has no Windows build number/);
  });

  it("reads the build from the Windows release", () => {
    assert.equal(windowsBuild("win32", "10.0.20348"), 20348);
    assert.equal(windowsBuild("linux", "6.1.0"), undefined);
  });

  it("picks the shipped Windows templates by build, and every one resolves to components that exist", async () => {
    const shipped = await loadCatalog(join(__dirname, "..", "..", "content"));
    for (const [build, name] of [
      [17763, "win2019"],
      [20348, "win2022"],
      [26100, "win2025"],
    ] as const) {
      // win2025 is experimental (its CNI does not support Server 2025 yet): used when named only.
      const t = name === "win2025" ? pickTemplate(shipped, { name, build }) : pickTemplate(shipped, { build });
      assert.equal(t.name, name);
      assert.ok(resolveTarget(shipped, t).components.length > 5);
    }
    assert.throws(
      () => pickTemplate(shipped, { build: 26100 }),
      /only experimental templates list Windows build 26100/,
    );
    assert.equal(pickTemplate(shipped, { name: "rke2-windows", build: 20348 }).name, "rke2-windows");
  });
});
