import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { nodeTokens, parseLifetime, tokenEpoch, tokenExpiration, tokenSecretOf } from "./node-tokens";

const pools = [
  { pool: "byo", names: ["host-1", "host-2"] },
  { pool: "ss", prefix: "ss" },
];

describe("node tokens", () => {
  it("one per named node and one per scale set, with ids of their own that no epoch changes", () => {
    const a = nodeTokens("proj/dev\0wflab1", pools);
    assert.deepEqual(
      a.map((t) => [t.pool, t.node ?? `${t.prefix}*`]),
      [
        ["byo", "host-1"],
        ["byo", "host-2"],
        ["ss", "ss*"],
      ],
    );
    for (const t of a) assert.match(t.id, /^[a-z0-9]{6}$/);
    assert.deepEqual(
      nodeTokens("proj/dev\0wflab1", pools),
      a,
      "the same ids in every epoch: the Secrets keep their names",
    );
    assert.notDeepEqual(
      nodeTokens("proj/prod\0wflab1", pools).map((t) => t.id),
      a.map((t) => t.id),
      "another stack's differ",
    );
  });

  it("derive each token's secret from the stack's, so a node's says nothing of another's", () => {
    const [t1, t2] = nodeTokens("s", pools);
    const s1 = tokenSecretOf("stack-secret", 7, t1!);
    assert.match(s1, /^[a-z0-9]{16}$/);
    assert.equal(tokenSecretOf("stack-secret", 7, t1!), s1);
    assert.notEqual(tokenSecretOf("stack-secret", 7, t2!), s1);
    assert.notEqual(tokenSecretOf("other-secret", 7, t1!), s1);
    assert.notEqual(tokenSecretOf("stack-secret", 8, t1!), s1);
  });

  it("expire at the end of the next epoch, or at the stack's last moment if sooner", () => {
    const timing = { lifetimeSeconds: parseLifetime("24h") };
    const now = new Date("2030-05-10T15:00:00Z");
    const epoch = tokenEpoch(now, timing);
    assert.equal(tokenExpiration(epoch, timing), "2030-05-12T00:00:00Z");
    assert.equal(tokenExpiration(epoch, { ...timing, notAfter: "2030-05-11T06:00:00Z" }), "2030-05-11T06:00:00Z");
    // Whatever the moment in the epoch, the token is good for at least one lifetime more.
    for (const h of [0, 1, 12, 23]) {
      const at = new Date(Date.UTC(2030, 4, 10, h));
      const expires = Date.parse(tokenExpiration(tokenEpoch(at, timing), timing));
      assert.ok(expires - at.getTime() >= 86_400_000);
    }
  });

  it("read lifetimes in minutes, hours and days, and refuse anything else", () => {
    assert.equal(parseLifetime("90m"), 5400);
    assert.equal(parseLifetime("7d"), 604_800);
    assert.throws(() => parseLifetime("1w"), /not a lifetime such as 24h or 7d/);
  });

  it("refuse ids that would collide, naming both nodes", () => {
    const many = [{ pool: "p", names: Array.from({ length: 200_000 }, (_, i) => `n${i}`) }];
    assert.throws(() => nodeTokens("s", many), /would share the id [a-z0-9]{6}: change cluster\.join\.tokenId/);
  });
});
