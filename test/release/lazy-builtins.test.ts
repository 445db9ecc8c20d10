/**
 * The lazy built-ins plugin, through a real esbuild bundle run by a real node:
 * a deferred built-in is not loaded until a bundle reads from it, then every
 * export is the real one (named, namespace and default imports, and CommonJS
 * requires), and assigning through it reaches the real module.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type * as Esbuild from "esbuild";
import { importExternal } from "../../agent/common/import-external";
import { lazyBuiltins } from "../../agent/release/lazy-builtins";
import { scratchDir } from "../support";

const dir = scratchDir("winfleet-lazy-");

const PROBE = `
const loaded = (m) => process.moduleLoadList.includes("NativeModule " + m);
// A file, not stdout: a piped stdout is a net.Socket, and would load net itself.
export function out(value) { require("fs").appendFileSync(process.env.PROBE_OUT, JSON.stringify(value) + "\\n"); }
export function report(label) { out({ label, crypto: loaded("crypto"), net: loaded("net"), child_process: loaded("child_process"), http2: loaded("http2") }); }
`;

async function bundle(name: string, source: string): Promise<string> {
  const { default: esbuild } = await importExternal<{ default: typeof Esbuild }>("esbuild");
  writeFileSync(join(dir, "probe.js"), PROBE);
  writeFileSync(join(dir, `${name}.js`), source);
  const out = join(dir, `${name}.bundle.js`);
  await esbuild.build({
    entryPoints: [join(dir, `${name}.js`)],
    bundle: true,
    platform: "node",
    format: "cjs",
    outfile: out,
    plugins: [lazyBuiltins()],
    logLevel: "silent",
  });
  return out;
}

const run = (file: string): Record<string, unknown>[] => {
  const probeOut = `${file}.out`;
  const r = spawnSync(process.execPath, [file], { encoding: "utf8", env: { ...process.env, PROBE_OUT: probeOut } });
  assert.equal(r.status, 0, r.stderr);
  return readFileSync(probeOut, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
};

describe("lazy built-ins", () => {
  it("loads a deferred built-in at its first use, not at the bundle's start", async () => {
    const file = await bundle(
      "named",
      `import { out, report } from "./probe.js";
       import { createHash } from "node:crypto";
       import * as net from "net";
       import cp from "node:child_process";
       report("start");
       const digest = createHash("sha256").update("x").digest("hex");
       report("after crypto");
       out(({ label: "values", digest, isIP: net.isIP("127.0.0.1"), spawnSync: typeof cp.spawnSync, same: cp.spawnSync === require("node:child_process").spawnSync }));
       report("end");`,
    );
    const [start, afterCrypto, values, end] = run(file);
    assert.deepEqual(start, { label: "start", crypto: false, net: false, child_process: false, http2: false });
    assert.equal(afterCrypto?.crypto, true);
    assert.equal(afterCrypto?.net, false);
    assert.deepEqual(values, {
      label: "values",
      digest: "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881",
      isIP: 4,
      spawnSync: "function",
      same: true,
    });
    assert.deepEqual(end, { label: "end", crypto: true, net: true, child_process: true, http2: false });
  });

  it("serves CommonJS requires, and an assignment through the stand-in reaches the real module", async () => {
    const file = await bundle(
      "cjs",
      `const { out, report } = require("./probe.js");
       const http2 = require("http2");
       report("start");
       const https = require("node:https");
       const agent = new https.Agent({ keepAlive: true });
       https.globalAgent = agent;
       out(({ label: "values", constants: typeof http2.constants.HTTP2_HEADER_PATH, assigned: process.getBuiltinModule("node:https").globalAgent === agent }));`,
    );
    const [start, values] = run(file);
    assert.equal(start?.http2, false);
    assert.deepEqual(values, { label: "values", constants: "string", assigned: true });
  });
});
