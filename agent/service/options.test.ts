import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, describe, it } from "node:test";
import { resolveRoot } from "./options";

const dir = mkdtempSync(join(tmpdir(), "winfleet-options-"));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("the root a read-only lifecycle command resolves", () => {
  it("is --root, else the config's root, made absolute", async () => {
    const config = join(dir, "agent.yaml");
    writeFileSync(config, `nodeName: n1\ncontent: /c\ntemplate: t\nroot: ${join(dir, "from-config")}\n`);
    assert.equal(await resolveRoot({ root: "rel" }), resolve("rel"));
    assert.equal(await resolveRoot({ config }), join(dir, "from-config"));
    assert.equal(await resolveRoot({ config, root: join(dir, "flag") }), join(dir, "flag"));
  });

  it("fails on a config or a public key the other lifecycle commands would refuse, naming it", async () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "nodeName: n1\ncontent: /c\ntemplate: t\nverifyIntervalSeconds: 0.01\n");
    await assert.rejects(resolveRoot({ config: bad, root: dir }), /verifyIntervalSeconds/);
    const key = join(dir, "absent.pem");
    await assert.rejects(resolveRoot({ root: dir, publicKey: key }), new RegExp(`--public-key ${key}: cannot read it`));
  });
});
