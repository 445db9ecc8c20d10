import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { powerShellSyntaxErrors } from "../agent/content/powershell-syntax";
import { COMMAND_LIMIT, decodeExtensionCommand, extensionCommand, extensionScript } from "./extension-command";
import { secretsLine } from "./node-secrets";

const HASH = "a".repeat(64);
// A realistic service-account token (a JWT) and a full kubeconfig with its CA inline.
const jwt = `eyJhbGciOiJSUzI1NiIsImtpZCI6Ik${"x".repeat(900)}`;
const kubeconfig = `apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: ${"Q".repeat(1500)}\n    server: https://10.0.0.4:6443\n  name: k\nusers:\n- name: calico-node\n  user:\n    token: ${jwt}\n`;

describe("the extension command", () => {
  it("carries the script exactly, as base64 of UTF-8 that no quoting touches", () => {
    const secrets = secretsLine({ KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef", NOTE: `it's "quoted" & <odd> %PATH%` });
    const command = extensionCommand(HASH, secrets, "sv=2024&sig=x%2F");
    assert.equal(decodeExtensionCommand(command), extensionScript(HASH, secrets, "sv=2024&sig=x%2F"));
    assert.match(command, /^powershell\.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -Command "& \(\[scriptblock\]::Create\(\[Text\.Encoding\]::UTF8\.GetString\(\[Convert\]::FromBase64String\('[A-Za-z0-9+/=]+'\)\)\)\)"$/);
  });

  it("parses, the one-liner and the script it runs", async () => {
    const command = extensionCommand(HASH, secretsLine({ KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef" }));
    const oneLiner = /-Command "(.*)"$/.exec(command)?.[1] ?? "";
    assert.deepEqual(await powerShellSyntaxErrors(oneLiner), []);
    assert.deepEqual(await powerShellSyntaxErrors(decodeExtensionCommand(command)), []);
  });

  it("has room for a node's secrets: the join token, kube-proxy's token and a full Calico kubeconfig", () => {
    const secrets = secretsLine({ KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef", KUBE_PROXY_TOKEN: jwt, CALICO_KUBECONFIG: kubeconfig });
    assert.ok(secrets.length > 3000, `${secrets.length}`);
    assert.ok(extensionCommand(HASH, secrets).length <= COMMAND_LIMIT);
  });

  it("refuses, naming the way out, what still does not fit", () => {
    const secrets = secretsLine({ KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef", BIG: "z".repeat(7000) });
    assert.throws(() => extensionCommand(HASH, secrets), /the extension takes at most 8191: only the join token belongs here, larger secrets travel through the Key Vault secret/);
  });
});
