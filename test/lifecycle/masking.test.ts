/**
 * Masking follows the secret, end to end: a component whose secret variables
 * come from the agent config and from the component's own default prints them
 * as they are, in base64 and hex, in a Secret manifest, a kubeconfig's
 * client-key-data and a PEM private key; none of it is in the progress events
 * (what the reporter turns into Kubernetes Events), the log, the journal, the
 * step logs, `status`, or any entry of the `diagnose` archive.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { agent, leakOf, tempDir, writeContent } from "../support";
import { unpack, writeAgentConfig } from "../diagnose/support";

const dir = tempDir("masking-");
after(() => rmSync(dir, { recursive: true, force: true }));

const root = join(dir, "root");
const secrets = { token: "abcdef.0123456789abcdef", pin: "Q7", fromDefault: "Pa55w0rd-from-content-default" };
const key = String(
  generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "sec1", format: "pem" }),
);
const keyLines = key.split("\n").filter((l) => l && !l.startsWith("-----"));

const commands = [
  'printf "plain: %s\\n" "$JOIN_TOKEN"',
  'printf "base64: %s\\n" "$(printf %s "$JOIN_TOKEN" | base64 -w0)"',
  'printf "hex: %s\\n" "$(printf %s "$JOIN_TOKEN" | od -An -tx1 | tr -d " \\n")"',
  'echo "registry login with $REGISTRY_PASSWORD"',
  'printf "kind: Secret\\ndata:\\n  password: %s\\n" "$(printf %s "$REGISTRY_PASSWORD" | base64 -w0)"',
  'echo "pin=$PIN" >&2',
  'cat "$WINFLEET_ROOT/key.pem"',
  'printf "    client-key-data: %s\\n" "$(base64 -w0 < "$WINFLEET_ROOT/key.pem")"',
  "exit 4",
];

let texts: Map<string, string>;

before(async () => {
  const content = writeContent(
    [
      {
        name: "joiner",
        version: "1.0.0",
        metadata: {
          variables: {
            JOIN_TOKEN: { secret: true },
            PIN: { secret: true },
            REGISTRY_PASSWORD: { secret: true, default: secrets.fromDefault },
          },
          install: { commands: [commands.join("\n")] },
        },
      },
    ],
    [{ name: "t", version: "1.0.0", packages: ["joiner_1.0.0"] }],
  );
  const config = writeAgentConfig(
    join(dir, "etc"),
    {
      nodeName: "node-m",
      root,
      content,
      template: "t",
      secrets: { JOIN_TOKEN: secrets.token, PIN: secrets.pin },
    },
    // A careless line some other program wrote to the agent's log, which diagnose collects.
    `{"msg":"a careless line","pin":"${secrets.pin}","b":"${Buffer.from(secrets.token).toString("base64")}"}\n`,
  );
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, "key.pem"), key);
  const applied = await agent(["apply", "--config", config]);
  assert.equal(applied.code, 1, applied.stderr);
  const status = await agent(["status", "--root", root]);
  const statusJson = await agent(["status", "--root", root, "--json"]);
  const out = join(dir, "d.tar.gz");
  const diagnosed = await agent(["diagnose", "--config", config, "--out", out]);
  assert.equal(diagnosed.code, 0, diagnosed.stderr);
  texts = new Map([
    ["events (progress on stdout)", applied.stdout],
    ["log (stderr)", applied.stderr],
    ["status", status.stdout + status.stderr],
    ["status --json", statusJson.stdout],
  ]);
  const state = join(root, ".winfleet");
  for (const f of readdirSync(state).filter((n) => n.endsWith(".json")))
    texts.set(`state ${f}`, readFileSync(join(state, f), "utf8"));
  for (const run of readdirSync(join(state, "logs")))
    for (const f of readdirSync(join(state, "logs", run)))
      texts.set(`step log ${f}`, readFileSync(join(state, "logs", run, f), "utf8"));
  for (const [path, data] of unpack(out).files) texts.set(`archive ${path}`, data.toString("utf8"));
});

describe("masking that follows the secret", () => {
  it("the command really printed each form (the step log shows where each was masked)", () => {
    const logs = [...texts]
      .filter(([k]) => k.startsWith("step log"))
      .map(([, v]) => v)
      .join("\n");
    assert.match(logs, /plain: \*\*\*/);
    assert.match(logs, /base64: \*\*\*/);
    assert.match(logs, /hex: \*\*\*/);
    assert.match(logs, /registry login with \*\*\*/);
    assert.match(logs, /password: \*\*\*/);
    assert.match(logs, /pin=\*\*\*/);
    assert.match(logs, /-----BEGIN EC PRIVATE KEY-----\*\*\*/);
    assert.match(logs, /client-key-data: \*\*\*/);
  });

  for (const [what, value] of Object.entries(secrets)) {
    it(`shows the ${what} secret in no form anywhere`, () => {
      for (const [where, text] of texts) {
        const leak = leakOf(text, value);
        assert.equal(leak, undefined, `${where} shows it ${leak}:\n${text.slice(0, 2000)}`);
      }
    });
  }

  it("shows no line of a private key anyone printed, nor its base64", () => {
    const encoded = Buffer.from(key).toString("base64");
    for (const [where, text] of texts) {
      for (const l of keyLines) assert.ok(!text.includes(l), `${where} shows a line of the key`);
      assert.ok(!text.includes(encoded.slice(0, 32)), `${where} shows the key's base64`);
    }
  });
});
