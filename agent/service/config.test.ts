import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseAgentConfig } from "./config";
import { ValidationError } from "../common";

const config = (extra: string): string => `nodeName: n1\ncontent: /c\ntemplate: t\ntemplateVersion: "1"\n${extra}`;

describe("the agent config's verify interval", () => {
  it("takes fractions of a second down to a tenth, and 0 for off", () => {
    assert.equal(parseAgentConfig(config("verifyIntervalSeconds: 0.1\n"), "agent.yaml").verifyIntervalSeconds, 0.1);
    assert.equal(parseAgentConfig(config("verifyIntervalSeconds: 0\n"), "agent.yaml").verifyIntervalSeconds, 0);
    assert.equal(parseAgentConfig(config(""), "agent.yaml").verifyIntervalSeconds, 300);
  });

  it("refuses less than a tenth of a second, naming the field", () => {
    assert.throws(
      () => parseAgentConfig(config("verifyIntervalSeconds: 0.01\n"), "agent.yaml"),
      (e: unknown) =>
        e instanceof ValidationError && /verifyIntervalSeconds/.test(e.message) && /0\.1 seconds/.test(e.message),
    );
  });
});
