import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../../agent/content/powershell-syntax";
import {
  COMMAND_LIMIT,
  decodeExtensionCommand,
  extensionCommand,
  extensionScript,
} from "../../components/extension-command";
import { realKubeconfig } from "../support";
import { secretsLine } from "../../components/node-secrets";

const HASH = "a".repeat(64);
// A service-account token (a JWT) as large as a real one.
const jwt = `eyJhbGciOiJSUzI1NiIsImtpZCI6Ik${"x".repeat(900)}`;

describe("the extension command", () => {
  it("carries the script exactly, as base64 of UTF-8 that no quoting touches", () => {
    const secrets = secretsLine({
      KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef",
      NOTE: `it's "quoted" & <odd> %PATH%`,
    });
    const command = extensionCommand(HASH, secrets, "sv=2024&sig=x%2F");
    assert.equal(decodeExtensionCommand(command), extensionScript(HASH, secrets, "sv=2024&sig=x%2F"));
    assert.match(
      command,
      /^powershell\.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "& \(\[scriptblock\]::Create\(\[Text\.Encoding\]::UTF8\.GetString\(\[Convert\]::FromBase64String\('[A-Za-z0-9+/=]+'\)\)\)\)"$/,
    );
  });

  it("parses, the one-liner and the script it runs", async () => {
    const command = extensionCommand(HASH, secretsLine({ KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef" }));
    const oneLiner = /-Command "(.*)"$/.exec(command)?.[1] ?? "";
    assert.deepEqual(await powerShellSyntaxErrors(oneLiner), []);
    assert.deepEqual(await powerShellSyntaxErrors(decodeExtensionCommand(command)), []);
  });

  it("passes the version of the Key Vault secret to read, and refuses what is not a version", () => {
    const version = "0123456789abcdef0123456789abcdef";
    const script = decodeExtensionCommand(
      extensionCommand(
        HASH,
        secretsLine({ KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef" }),
        "sv=2024&sig=x",
        version,
      ),
    );
    assert.match(
      script,
      /& \$script -Secrets '\{"KUBE_BOOTSTRAP_TOKEN":"abcdef\.0123456789abcdef"\}' -ContentSas 'sv=2024&sig=x' -SecretsVersion '0123456789abcdef0123456789abcdef'\n/,
    );
    // The bytes whose epoch was checked are what runs, not the copy on disk.
    assert.match(script, /^\$script = \[scriptblock\]::Create\(\[Text\.Encoding\]::UTF8\.GetString\(\$bytes\)\)$/m);
    assert.doesNotMatch(script, /& \(?Join-Path|& '.*bootstrap\.ps1'|-File/);
    assert.throws(() => extensionCommand(HASH, "{}", undefined, "latest' ; calc"), /is not a Key Vault secret version/);
  });

  it("has room to spare for what it carries: an RKE2 join token, a SAS and the secret's version", () => {
    const rke2Token = `K10${"f".repeat(64)}::server:${"p".repeat(32)}`;
    const sas = `sv=2024-11-04&sr=b&sp=r&se=2027-06-30T00%3A00%3A00Z&spr=https&sig=${"s".repeat(44)}`;
    assert.ok(
      extensionCommand(HASH, secretsLine({ RKE2_TOKEN: rke2Token }), sas, "0123456789abcdef0123456789abcdef").length <
        COMMAND_LIMIT / 3,
    );
  });

  it("could not carry a real kubeconfig with kube-proxy's token, which is why they travel through Key Vault", () => {
    const secrets = secretsLine({
      KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef",
      KUBE_PROXY_TOKEN: jwt,
      CALICO_KUBECONFIG: realKubeconfig(),
    });
    assert.throws(() => extensionCommand(HASH, secrets), /the extension takes at most 8191/);
  });

  it("refuses, naming the way out, what still does not fit", () => {
    const secrets = secretsLine({ KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef", BIG: "z".repeat(7000) });
    assert.throws(
      () => extensionCommand(HASH, secrets),
      /the extension takes at most 8191: only the join token belongs here, larger secrets travel through the Key Vault secret/,
    );
  });
});
