import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { z } from "zod";
import { agentConfigSchema } from "../../agent/service/config";
import { REDACTED, redactSecrets, secretField } from "../../agent/common/secret-fields";

describe("redactSecrets", () => {
  it("hides the agent config's secrets by the schema's mark, keeping their names and everything else", () => {
    const config = {
      content: "c",
      variables: { A: "shown" },
      secrets: { TOKEN: "hidden-1", PASSWORD: "hidden-2" },
      report: { namespace: "default" },
    };
    assert.deepEqual(redactSecrets(agentConfigSchema, config), {
      content: "c",
      variables: { A: "shown" },
      secrets: { TOKEN: REDACTED, PASSWORD: REDACTED },
      report: { namespace: "default" },
    });
  });

  it("shows an unknown key or a value no union member takes as a secret: only what the schema knows is shown", () => {
    assert.deepEqual(redactSecrets(agentConfigSchema, { content: "c", tokne: "typo-secret", broker: 42 }), {
      content: "c",
      tokne: REDACTED,
      broker: REDACTED,
    });
  });

  it("finds a mark through optional, default, arrays and unions", () => {
    const schema = z.object({
      list: z.array(z.object({ key: secretField(z.string(), "test") })).optional(),
      either: z.union([z.number(), secretField(z.string(), "test")]).default(1),
    });
    assert.deepEqual(redactSecrets(schema, { list: [{ key: "k1" }], either: "s" }), {
      list: [{ key: REDACTED }],
      either: REDACTED,
    });
  });
});
