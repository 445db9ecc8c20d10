/**
 * Keys are checked where they enter: the agent config names `publicKey`,
 * `--public-key` and `release --key` name the file, each saying what is wrong.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { readKey } from "../../agent/service/options";
import { loadAgentConfig } from "../../agent/service/config";
import { ed25519KeyProblem, ed25519PrivateKeyProblem } from "../../agent/common/ed25519-key";
import { ValidationError } from "../../agent/common/errors";
import { scratchDir } from "../support";

const scratch = scratchDir("winfleet-key-");

const ed = generateKeyPairSync("ed25519");
const pem = {
  public: ed.publicKey.export({ type: "spki", format: "pem" }).toString(),
  private: ed.privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  rsa: generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({ type: "spki", format: "pem" }).toString(),
};

describe("pinned public keys", () => {
  it("accepts an ed25519 public key and says what is wrong with anything else", () => {
    assert.equal(ed25519KeyProblem(pem.public), undefined);
    assert.match(ed25519KeyProblem(pem.private) ?? "", /is a private key: pin the public key/);
    assert.match(ed25519KeyProblem(pem.rsa) ?? "", /is an rsa key, not ed25519/);
    assert.match(ed25519KeyProblem(pem.public.slice(0, 60)) ?? "", /is not a PEM public key/);
  });

  it("tells a signing key from anything else, and release refuses one before building", () => {
    assert.equal(ed25519PrivateKeyProblem(pem.private), undefined);
    assert.match(
      ed25519PrivateKeyProblem(pem.public) ?? "",
      /is a public key: releases are signed with the private key/,
    );
    assert.match(
      ed25519PrivateKeyProblem(
        generateKeyPairSync("rsa", { modulusLength: 1024 })
          .privateKey.export({ type: "pkcs8", format: "pem" })
          .toString(),
      ) ?? "",
      /is an rsa key, not ed25519/,
    );
    assert.match(
      ed25519PrivateKeyProblem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") ?? "",
      /is not a PEM private key/,
    );
    const pub = join(scratch, "fleet.pub");
    writeFileSync(pub, pem.public);
    const r = spawnSync(
      process.execPath,
      [join(__dirname, "..", "..", "bin", "winfleet.js"), "release", "--key", pub, "--out", join(scratch, "release")],
      { encoding: "utf8", timeout: 60_000 },
    );
    assert.equal(r.status, 1);
    assert.equal(
      r.stderr,
      `error: --key ${pub} is a public key: releases are signed with the private key (the .key file)\n`,
    );
    assert.ok(!existsSync(join(scratch, "release")));
  });

  it("refuses a bad publicKey in the agent config, naming it", async () => {
    const config = join(scratch, "agent.json");
    writeFileSync(config, JSON.stringify({ content: "content", template: "sandbox", publicKey: pem.rsa }));
    await assert.rejects(
      loadAgentConfig(config),
      (e: unknown) =>
        e instanceof ValidationError &&
        e.issues.some((i) => i.path === "publicKey" && /is an rsa key, not ed25519/.test(i.message)),
    );
    writeFileSync(config, JSON.stringify({ content: "content", template: "sandbox", publicKey: pem.public }));
    assert.equal((await loadAgentConfig(config)).publicKey, pem.public);
  });

  it("refuses a --public-key file that holds no ed25519 public key, naming the file", () => {
    const file = join(scratch, "fleet.key");
    writeFileSync(file, pem.private);
    assert.throws(() => readKey(file), new RegExp(`--public-key ${file} is a private key`));
    writeFileSync(file, pem.public);
    assert.equal(readKey(file), pem.public);
  });
});
