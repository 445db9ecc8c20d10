/**
 * Signature checks against file names that are also names of Object.prototype's
 * members: an unsigned file called `constructor` or `__proto__` is an added file
 * like any other, refused as tampering.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { BundleVerificationError, signBundle, verifyBundle } from "./signing";

const scratch = mkdtempSync(join(tmpdir(), "winfleet-signing-unit-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const priv = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const pub = publicKey.export({ type: "spki", format: "pem" }).toString();

let n = 0;
async function signedBundle(): Promise<string> {
  const dir = join(scratch, `b${n++}`);
  mkdirSync(join(dir, "lib"), { recursive: true });
  writeFileSync(join(dir, "a.txt"), "a\n");
  writeFileSync(join(dir, "lib", "b.js"), "b\n");
  await signBundle(dir, priv, "1.0.0");
  return dir;
}

const PROTOTYPE_NAMES = [
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "__defineGetter__",
  "__proto__",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "toLocaleString",
];

describe("unsigned files named after Object.prototype members", () => {
  for (const name of PROTOTYPE_NAMES) {
    it(`refuses an added file named ${name}`, async () => {
      const dir = await signedBundle();
      writeFileSync(join(dir, name), "unsigned\n");
      await assert.rejects(
        verifyBundle(dir, pub),
        (e: unknown) =>
          e instanceof BundleVerificationError &&
          e.kind === "tampered" &&
          e.message.includes(`${name} was added after signing`),
      );
    });
  }

  it("signs and verifies files with those names when they were there at signing", async () => {
    const dir = join(scratch, "named");
    mkdirSync(dir, { recursive: true });
    for (const name of PROTOTYPE_NAMES.filter((x) => x !== "__proto__")) writeFileSync(join(dir, name), `${name}\n`);
    await signBundle(dir, priv, "1.0.0");
    const verified = await verifyBundle(dir, pub);
    assert.equal(verified.files, PROTOTYPE_NAMES.length - 1);
  });

  it("refuses to sign a file named __proto__, which no signature's file list can hold", async () => {
    const dir = join(scratch, "proto");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "__proto__"), "x\n");
    await assert.rejects(signBundle(dir, priv, "1.0.0"), /__proto__ cannot be signed/);
  });
});
