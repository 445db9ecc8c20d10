import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationError } from "../common/errors";
import { parseIgnition } from "./parse";

function issuesOf(doc: unknown, lenient = false): { path: string; message: string; severity: string }[] {
  try {
    parseIgnition(typeof doc === "string" ? doc : JSON.stringify(doc), { lenient });
  } catch (e) {
    if (e instanceof ValidationError) return e.issues.map((i) => ({ ...i }));
    throw e;
  }
  return [];
}

describe("parseIgnition", () => {
  it("names the JSON path of every bad value, not just the first", () => {
    const issues = issuesOf({
      ignition: { version: "3.3.0" },
      storage: {
        files: [
          { path: "/ok", contents: { source: "data:,x" } },
          { path: "rel" },
          { path: "/h", contents: { source: "data:,x", verification: { hash: "sha512-00" } } },
        ],
      },
    }).filter((i) => i.severity === "error");
    assert.deepEqual(
      issues.map((i) => i.path),
      ["storage.files[1].path", "storage.files[2].contents.verification.hash"],
    );
  });

  it("reports JSON type errors at their path", () => {
    const issues = issuesOf({ ignition: { version: "3.1.0" }, storage: { files: [{ path: "/a", mode: "420" }] } });
    assert.equal(issues[0]?.path, "storage.files[0].mode");
  });

  it("warns about unused keys and keys from a later spec, and ignores them", () => {
    const { warnings, config } = parseIgnition(
      JSON.stringify({
        ignition: { version: "3.0.0" },
        x: 1,
        storage: { files: [{ path: "/a", contents: { source: "data:,x", httpHeaders: 7 } }] },
      }),
    );
    assert.deepEqual(
      warnings.map((w) => w.path),
      ["x", "storage.files[0].contents.httpHeaders"],
    );
    assert.deepEqual(config.files[0]?.contents?.httpHeaders, []);
  });

  it("applies each spec line's own defaults", () => {
    const v3 = parseIgnition('{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"/a"}]}}').config.files[0];
    assert.equal(v3?.overwrite, false);
    assert.equal(v3?.mode, undefined);
    const v2 = parseIgnition('{"ignition":{"version":"2.2.0"},"storage":{"files":[{"filesystem":"root","path":"/a"}]}}')
      .config.files[0];
    assert.equal(v2?.overwrite, true);
    assert.equal(v2?.mode, 0);
    assert.equal(v2?.contents?.source, "data:,");
  });

  it("merges 2.2 append entries for one path into one file with fragments", () => {
    const { config } = parseIgnition(
      JSON.stringify({
        ignition: { version: "2.2.0" },
        storage: {
          files: [
            { filesystem: "root", path: "/log", contents: { source: "data:,a" }, mode: 420 },
            { filesystem: "root", path: "/log", append: true, contents: { source: "data:,b" } },
            { filesystem: "root", path: "/log", append: true, contents: { source: "data:,c" }, mode: 384 },
          ],
        },
      }),
    );
    assert.equal(config.files.length, 1);
    assert.deepEqual(
      config.files[0]?.append.map((r) => r.source),
      ["data:,b", "data:,c"],
    );
    assert.equal(config.files[0]?.mode, 384);
  });

  it("refuses an empty 2.2 filesystem unless lenient, and then reports the repair", () => {
    const doc = {
      ignition: { version: "2.2.0" },
      storage: { files: [{ filesystem: "", path: "/a", contents: { source: "data:,x" } }] },
    };
    assert.equal(issuesOf(doc)[0]?.message, "no filesystem specified");
    const { warnings } = parseIgnition(JSON.stringify(doc), { lenient: true });
    assert.match(warnings[0]?.message ?? "", /repaired/);
  });

  it("accepts Windows drive paths as an extension and canonicalises them", () => {
    const { config } = parseIgnition(
      '{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"c:\\\\k\\\\kubelet.exe"}]}}',
    );
    assert.equal(config.files[0]?.path, "C:/k/kubelet.exe");
  });

  it("rejects spec versions it does not read, and non-objects", () => {
    for (const doc of [
      '{"ignition":{"version":"3.5.0"}}',
      '{"ignition":{"version":"2.1.0"}}',
      "[]",
      "null",
      "{",
      "{}",
    ]) {
      assert.equal(issuesOf(doc).length, 1, doc);
    }
  });

  it("lists the sections that do not apply on Windows", () => {
    const { config } = parseIgnition(
      '{"ignition":{"version":"3.3.0"},"systemd":{"units":[{"name":"a.service"}]},"kernelArguments":{"shouldExist":["x"]}}',
    );
    assert.deepEqual(
      config.notApplicable.map((n) => n.path),
      ["systemd.units", "kernelArguments"],
    );
  });
});
