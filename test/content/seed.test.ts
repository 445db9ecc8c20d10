/**
 * The 2019 prototype's own examples load: the win2019 template as is, the
 * prewin1809 metadata and component only through lenient mode, which reports
 * every repair it made.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ValidationError } from "../../agent/common/errors";
import { loadComponent, parseMetadata, parseTemplate } from "../../agent/content/load";

const seed = (f: string): string => readFileSync(join(__dirname, "..", "fixtures", "seed", f), "utf8");

describe("the seed's content", () => {
  it("loads the win2019 template", () => {
    const { value } = parseTemplate(seed("win2019.json"));
    assert.equal(value.name, "win2019");
    assert.equal(value.packages.length, 10);
    assert.equal(value.packages[7], "ovn_16e1a3cf");
  });

  it("refuses the prewin1809 metadata strictly, saying lenient mode loads it", () => {
    assert.throws(
      () => parseMetadata(seed("prewin1809_v1.0.metadata")),
      (e: unknown) => e instanceof ValidationError && /--lenient/.test(e.message),
    );
  });

  it("loads the prewin1809 metadata leniently and reports the four commas it inserted", () => {
    const { value, warnings } = parseMetadata(seed("prewin1809_v1.0.metadata"), "prewin1809", { lenient: true });
    assert.deepEqual(
      warnings.map((w) => w.message),
      [
        'repaired: inserted a missing comma before "uninstall" on line 11',
        'repaired: inserted a missing comma before "pre_upgrade" on line 18',
        'repaired: inserted a missing comma before "post_upgrade" on line 26',
        'repaired: inserted a missing comma before "files" on line 33',
      ],
    );
    assert.deepEqual(value.install, {
      priority: 100,
      lprecmds: [],
      commands: ["\\bin\\prereq1809.ps1"],
      lpstcmds: [],
      reboot: false,
    });
    assert.equal(value.pre_upgrade.uninstall, false);
  });

  it("loads the prewin1809 component (spec 2.2.0, empty filesystem) leniently", async () => {
    await assert.rejects(loadComponent(seed("prewin1809_v1.0.ign"), "prewin1809"), /no filesystem specified/);
    const { value, warnings } = await loadComponent(seed("prewin1809_v1.0.ign"), "prewin1809", { lenient: true });
    assert.equal(value.metadata.name, "prewin1809");
    assert.deepEqual(
      value.config.files.map((f) => f.path),
      ["/bin/metadata/prewin1809_v1.0.metadata", "/bin/prereq1809.ps1"],
    );
    assert.equal(warnings.filter((w) => w.message.startsWith("repaired")).length, 6);
  });
});
