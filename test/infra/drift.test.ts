import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type Changes, DRIFT_EXIT, type StackOps, checkDrift } from "../../infra/drift";

function ops(
  refresh: Changes,
  preview: Changes,
  upResult: Changes | Error = { update: 1, same: 9 },
): StackOps & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    refreshPreview: () => (calls.push("refresh"), Promise.resolve(refresh)),
    preview: () => (calls.push("preview"), Promise.resolve(preview)),
    up: () => (calls.push("up"), upResult instanceof Error ? Promise.reject(upResult) : Promise.resolve(upResult)),
  };
}

describe("drift decisions", () => {
  it("is clean when neither the refresh nor the preview would change anything", async () => {
    const o = ops({ same: 12 }, { same: 12 });
    const r = await checkDrift("dev", o, { remediate: true });
    assert.equal(r.exitCode, DRIFT_EXIT.clean);
    assert.deepEqual(o.calls, ["refresh", "preview"], "no up without drift, even with --remediate");
    assert.match(r.summary, /no drift/);
  });

  it("finds drift in the cloud (refresh) and in Git (preview), and says which", async () => {
    const cloud = await checkDrift("dev", ops({ update: 2, same: 10 }, { same: 12 }), { remediate: false });
    assert.equal(cloud.exitCode, DRIFT_EXIT.drift);
    assert.match(cloud.summary, /cloud vs state \(refresh\): 2 to update/);
    const git = await checkDrift("dev", ops({ same: 12 }, { create: 1, replace: 1, same: 10 }), { remediate: false });
    assert.equal(git.exitCode, DRIFT_EXIT.drift);
    assert.match(git.summary, /Git vs state \(preview\):\s+1 to create, 1 to replace/);
    assert.match(git.summary, /--remediate/);
  });

  it("corrects drift with up when asked, and lets an up failure through", async () => {
    const o = ops({ delete: 1 }, { same: 3 });
    const r = await checkDrift("dev", o, { remediate: true });
    assert.deepEqual(o.calls, ["refresh", "preview", "up"]);
    assert.equal(r.exitCode, DRIFT_EXIT.remediated);
    assert.match(r.summary, /DRIFT corrected by pulumi up: 1 to update/);
    await assert.rejects(
      checkDrift("dev", ops({ delete: 1 }, {}, new Error("conflict")), { remediate: true }),
      /conflict/,
    );
  });
});

describe("npm run drift", () => {
  it("says clearly when the Pulumi CLI is not there, with its own exit code", () => {
    const r = spawnSync(
      process.execPath,
      ["--import", "tsx", join(__dirname, "..", "..", "infra", "drift-main.ts"), "--stack", "dev"],
      { encoding: "utf8", env: { ...process.env, PATH: "/nonexistent" } },
    );
    assert.equal(r.status, DRIFT_EXIT.noCli, r.stderr);
    assert.match(r.stderr, /the Pulumi CLI is not installed here/);
  });

  it("exits 2 without --stack", () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", join(__dirname, "..", "..", "infra", "drift-main.ts")], {
      encoding: "utf8",
    });
    assert.equal(r.status, DRIFT_EXIT.usage);
  });
});
