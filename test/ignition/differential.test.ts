/**
 * Differential tests against real CoreOS Ignition (Debian's `ignition` 2.14,
 * specs 3.0–3.3): the same config applied by Ignition's fetch-offline + files
 * stages and by our engine to identical roots must give identical trees (paths,
 * types, bytes, modes, link targets, hard-link counts), or both must fail, ours
 * having written nothing.
 */
import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync, chmodSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { errorMessage } from "../../agent/common/errors";
import { applyIgnition, parseIgnition, renderV3, rootedMapper } from "../../agent/ignition";
import { IGNITION_OWN_FILES, prepareRoot, runCoreOsIgnition } from "./coreos";
import { type PreNode, applyCorpus } from "./corpus-apply";
import { v22Corpus } from "./corpus-v22";
import { IGNITION, scratchDir, skipUnlessInstalled, snapshotTree } from "../support";

const skip = skipUnlessInstalled(IGNITION);
const work = scratchDir("winfleet-diff-");

function makeRoot(name: string, pre: readonly PreNode[]): string {
  const root = join(work, name);
  mkdirSync(root, { recursive: true });
  prepareRoot(root);
  for (const p of pre) {
    const host = join(root, p.path);
    mkdirSync(dirname(host), { recursive: true });
    if (p.type === "file") {
      writeFileSync(host, p.data ?? "");
      chmodSync(host, p.mode ?? 0o644);
    } else if (p.type === "dir") {
      mkdirSync(host, { recursive: true });
      writeFileSync(join(host, "inside"), "pre-existing");
      chmodSync(host, p.mode ?? 0o755);
    } else {
      symlinkSync(p.target ?? "/x", host);
    }
  }
  return root;
}

/** Applies with both engines; `diff` describes any difference. */
async function compare(
  name: string,
  ours: string,
  theirs: string,
  pre: readonly PreNode[],
): Promise<{ diff?: string; applied: boolean }> {
  const coreosRoot = makeRoot(`${name}-coreos`, pre);
  const ourRoot = makeRoot(`${name}-ours`, pre);
  const before = snapshotTree(ourRoot, IGNITION_OWN_FILES);
  const coreos = runCoreOsIgnition(theirs, coreosRoot);
  let ourError: unknown;
  try {
    const { config } = parseIgnition(ours);
    await applyIgnition(config, {
      mapper: rootedMapper(ourRoot),
      ledgerPath: join(ourRoot, ".winfleet", "ledger.json"),
      durable: false,
    });
  } catch (e) {
    ourError = e;
  }
  const ourTree = snapshotTree(ourRoot, IGNITION_OWN_FILES);
  if (!coreos.ok) {
    if (ourError === undefined) {
      return {
        applied: false,
        diff: `Ignition failed but we applied:\n${coreos.log
          .split("\n")
          .filter((l) => /CRITICAL|ERROR/.test(l))
          .join("\n")}`,
      };
    }
    try {
      assert.deepEqual(ourTree, before);
    } catch {
      return { applied: false, diff: "we failed as Ignition did, but wrote something first" };
    }
    return { applied: false };
  }
  if (ourError !== undefined)
    return { applied: true, diff: `Ignition applied but we failed: ${errorMessage(ourError)}` };
  try {
    assert.deepEqual(ourTree, snapshotTree(coreosRoot, IGNITION_OWN_FILES));
  } catch (e) {
    return { applied: true, diff: `trees differ:\n${(e as Error).message}` };
  }
  return { applied: true };
}

describe("apply matches CoreOS Ignition", { skip }, () => {
  it("on 260 generated spec-3.x configs, at least 150 of which apply", async () => {
    const failures: string[] = [];
    let applied = 0;
    for (const c of applyCorpus(20261122, 260)) {
      const text = JSON.stringify(c.config);
      const result = await compare(c.name, text, text, c.pre);
      if (result.diff) failures.push(`${c.name}: ${text}\npre: ${JSON.stringify(c.pre)}\n${result.diff}`);
      if (result.applied) applied++;
    }
    assert.deepEqual(failures, [], failures.slice(0, 3).join("\n\n"));
    // Both outcomes must be exercised: mostly trees to compare, some failures to agree on.
    assert.ok(applied >= 150 && applied < 250, `${applied} of 260 configs applied`);
  });

  it("re-applying every successful config rewrites nothing", async () => {
    for (const c of applyCorpus(20261122, 200).slice(0, 60)) {
      const root = makeRoot(`${c.name}-idem`, c.pre);
      const { config } = parseIgnition(JSON.stringify(c.config));
      const options = {
        mapper: rootedMapper(root),
        ledgerPath: join(root, ".winfleet", "ledger.json"),
        durable: false,
      };
      try {
        await applyIgnition(config, options);
      } catch {
        continue;
      }
      const again = await applyIgnition(config, options);
      assert.equal(
        again.operations,
        0,
        `${c.name}: second apply planned ${again.operations} operations (${again.changed.join(", ")})`,
      );
    }
  });

  it("spec 2.2 configs, translated to 3.x, give Ignition's tree", async () => {
    const failures: string[] = [];
    for (const c of v22Corpus(2202, 60)) {
      const ours = JSON.stringify(c.config);
      const translated = JSON.stringify(renderV3(parseIgnition(ours).config));
      const { diff } = await compare(c.name, ours, translated, c.pre);
      if (diff) failures.push(`${c.name}: ${ours}\n${diff}`);
    }
    assert.deepEqual(failures, [], failures.slice(0, 3).join("\n\n"));
  });
});
