import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseListValue, parsePortSpec } from "./list-value";

describe("wins list arguments", () => {
  it("split on spaces outside quotes and keep the quotes, as wins did", () => {
    assert.deepEqual(parseListValue(`up --wins-args='--config=c:\\etc\\config' "a b"`), [
      "up",
      "--wins-args='--config=c:\\etc\\config'",
      '"a b"',
    ]);
    assert.deepEqual(parseListValue(""), []);
    assert.deepEqual(parseListValue("  a   b "), ["a", "b"]);
    assert.throws(() => parseListValue("a 'b"), /unpaired escaped quote/);
  });

  it("parse port specs and ranges", () => {
    assert.deepEqual(parsePortSpec("TCP:443"), { protocol: "TCP", ports: [443] });
    assert.deepEqual(parsePortSpec("udp:4789-4790"), { protocol: "UDP", ports: [4789, 4790] });
    assert.throws(() => parsePortSpec("TCP:90-80"), /low port/);
    assert.throws(() => parsePortSpec("SCTP:1"), /protocol/);
    assert.throws(() => parsePortSpec("UDP:53", ["TCP"]), /protocol must be TCP/);
  });
});
