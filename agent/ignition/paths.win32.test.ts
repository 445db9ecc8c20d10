/**
 * Windows link texts (symbolic links and junctions, as Node reads them back)
 * and how a walk through them stays inside the root: tested as data, since no
 * Windows host runs these tests.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type PathNode, resolveInRoot } from "./resolve";
import { rootedMapper } from "./paths";
import { windowsLinkTarget, windowsMapper, windowsNameProblem } from "./paths.win32";

describe("windowsLinkTarget", () => {
  const cases: [string, ReturnType<typeof windowsLinkTarget>][] = [
    ["C:\\Windows\\System32", { kind: "absolute", path: "C:/Windows/System32" }],
    ["d:\\data\\", { kind: "absolute", path: "D:/data/" }],
    ["E:", { kind: "absolute", path: "E:/" }],
    ["\\??\\C:\\ProgramData\\x", { kind: "absolute", path: "C:/ProgramData/x" }],
    ["\\\\?\\D:\\x", { kind: "absolute", path: "D:/x" }],
    ["\\\\.\\D:\\x", { kind: "absolute", path: "D:/x" }],
    ["\\x\\y", { kind: "absolute", path: "/x/y", sameDrive: true }],
    ["..\\..\\x", { kind: "relative", path: "../../x" }],
    ["sub/dir", { kind: "relative", path: "sub/dir" }],
  ];
  for (const [text, expected] of cases) {
    it(`reads ${JSON.stringify(text)}`, () => assert.deepEqual(windowsLinkTarget(text), expected));
  }

  for (const text of [
    "\\\\server\\share\\x",
    "\\\\?\\UNC\\server\\share",
    "\\??\\UNC\\server\\share",
    "\\??\\Volume{0b1c2d3e-0000-0000-0000-100000000000}\\x",
    "\\\\?\\GLOBALROOT\\Device\\HarddiskVolume2",
    "C:relative",
  ]) {
    it(`refuses ${JSON.stringify(text)}`, () => assert.equal(windowsLinkTarget(text).kind, "refused"));
  }
});

describe("a walk through junctions and links stays inside the root", () => {
  // A host as data: config path → node.
  const host =
    (nodes: Record<string, PathNode>) =>
    (p: string): PathNode =>
      nodes[p] ?? { type: "absent" };
  const resolve = (path: string, nodes: Record<string, PathNode>): string =>
    resolveInRoot(path, host(nodes), windowsLinkTarget);

  it("re-roots a junction to another drive", () => {
    assert.equal(
      resolve("/ProgramData/app/x", { "/ProgramData": { type: "symlink", text: "\\??\\D:\\ProgramData\\" } }),
      "D:/ProgramData/app/x",
    );
  });

  it("keeps a drive-less absolute target on the link's drive", () => {
    assert.equal(resolve("D:/a/b/x", { "D:/a": { type: "symlink", text: "\\data" } }), "D:/data/b/x");
  });

  it("stops .. at the drive's root", () => {
    assert.equal(resolve("D:/a/x", { "D:/a": { type: "symlink", text: "..\\..\\..\\Windows" } }), "D:/Windows/x");
  });

  it("follows a chain of a link to a junction", () => {
    const nodes: Record<string, PathNode> = {
      "/a": { type: "symlink", text: "C:\\b" },
      "C:/b": { type: "symlink", text: "\\??\\E:\\c" },
    };
    assert.equal(resolve("/a/x", nodes), "E:/c/x");
  });

  it("refuses a junction to a network share, naming the path", () => {
    assert.throws(
      () =>
        resolveInRoot(
          "/a/x",
          host({ "/a": { type: "symlink", text: "\\\\srv\\share" } }),
          windowsLinkTarget,
          "files[0].path",
        ),
      /files\[0\]\.path: \/a is a link to \\\\srv\\share, which is a network share/,
    );
  });

  it("maps resolved paths to their drives' roots", () => {
    const m = windowsMapper("C:");
    assert.deepEqual(m.locate("/ProgramData/x"), { base: "C:\\", names: ["ProgramData", "x"] });
    assert.deepEqual(m.locate("D:/data"), { base: "D:\\", names: ["data"] });
  });
});

describe("Windows names", () => {
  for (const name of [
    "CON",
    "con",
    "NUL.txt",
    "com1.log",
    "LPT9",
    "COM\u00b9",
    "AUX .d",
    "a.",
    "b ",
    "x:y",
    "q?",
    "a\\b",
    "t\u0001",
  ]) {
    it(`refuses ${JSON.stringify(name)}`, () => assert.notEqual(windowsNameProblem(name), undefined));
  }
  for (const name of ["console.txt", "com10.log", "nul_", "a .b", ".hidden", "CONFIG"]) {
    it(`accepts ${JSON.stringify(name)}`, () => assert.equal(windowsNameProblem(name), undefined));
  }
});

describe("rootedMapper on Windows", () => {
  it("maps another drive to itself on a drive's root, and to <root>\\D below a directory", () => {
    assert.deepEqual(rootedMapper("C:\\", "C", undefined, "win32").locate("D:/data/x"), {
      base: "D:\\",
      names: ["data", "x"],
    });
    assert.deepEqual(rootedMapper("C:\\r", "C", undefined, "win32").locate("D:/data/x"), {
      base: "C:\\r",
      names: ["D", "data", "x"],
    });
    assert.deepEqual(rootedMapper("C:\\r", "C", undefined, "win32").locate("C:/x"), { base: "C:\\r", names: ["x"] });
  });

  it("holds names to Windows' rules, folds case and keeps only the write bit of a mode", () => {
    const m = rootedMapper("C:\\r", "C", undefined, "win32");
    assert.equal(m.foldCase, true);
    assert.equal(m.modeBits, 0o200);
    assert.match(m.nameProblem?.("CON") ?? "", /device name/);
    const linux = rootedMapper("/r", "C", undefined, "linux");
    assert.equal("nameProblem" in linux, false);
    assert.equal(linux.foldCase, undefined);
  });
});
