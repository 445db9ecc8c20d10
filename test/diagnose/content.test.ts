/**
 * The content bundle in the archive: a built bundle's manifest, and whether it
 * still verifies against the key the node pins — a bundle changed on the node
 * after it was applied is named in the summary.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { appendFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { signBundle } from "../../agent/release/signing";
import { entryJson, unpack, writeAgentConfig } from "./support";
import { agent, applyUntilSettled, tempDir } from "../support";

const REPO = join(__dirname, "..", "..");
const dirs: string[] = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe("diagnose and a signed content bundle", () => {
  it("archives the manifest and the signature status, and the summary names a bundle tampered with", async () => {
    const dir = tempDir("diagnose-signed-");
    dirs.push(dir);
    const bundle = join(dir, "bundle");
    const built = spawnSync(
      process.execPath,
      [join(REPO, "bin", "winfleet.js"), "content", "build", "--content", join(REPO, "content"), "--out", bundle],
      { encoding: "utf8", timeout: 120_000 },
    );
    assert.equal(built.status, 0, built.stderr);
    const { publicKey, privateKey } = generateKeyPairSync("ed25519");
    await signBundle(bundle, privateKey.export({ type: "pkcs8", format: "pem" }).toString(), "1.4.0");
    const config = writeAgentConfig(join(dir, "etc"), {
      nodeName: "node-c",
      root: join(dir, "root"),
      content: bundle,
      template: "sandbox",
      templateVersion: "1.0.0",
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
    });
    const applied = await applyUntilSettled(["--config", config]);
    assert.equal(applied.code, 0, applied.stderr);

    const out = join(dir, "ok.tar.gz");
    assert.equal((await agent(["diagnose", "--config", config, "--out", out])).code, 0);
    const u = unpack(out);
    assert.deepEqual(entryJson<{ format: number }>(u, "content/manifest.json").format, 1);
    const signature = entryJson<{ status: string; version: string; keyId: string }>(u, "content/signature.json");
    assert.deepEqual(
      [signature.status, signature.version, signature.keyId.length],
      ["verified", "1.4.0", 64],
      "the signed release version and the key's fingerprint",
    );

    const template = readdirSync(join(bundle, "templates"))[0] ?? "";
    appendFileSync(join(bundle, "templates", template), " ");
    const r = await agent(["diagnose", "--config", config, "--summary"]);
    assert.equal(r.code, 1);
    assert.match(
      r.stdout.split("\n")[0] ?? "",
      new RegExp(`^CONTENT TAMPERED: .*templates/${template.replace(/\./g, "\\.")} differs from what was signed`),
    );
  });
});
