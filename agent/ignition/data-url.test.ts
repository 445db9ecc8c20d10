import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { DataUrlError, decodeDataUrl, encodeDataUrl } from "./data-url";

describe("data URLs", () => {
  it("decodes both encodings", () => {
    assert.equal(decodeDataUrl("data:,hello%20world").data.toString(), "hello world");
    assert.equal(decodeDataUrl("data:text/plain;charset=utf-8;base64,aGk=").data.toString(), "hi");
    assert.equal(decodeDataUrl("data:,").data.length, 0);
  });

  it("rejects what Ignition rejects, with its wording", () => {
    const cases: [string, string][] = [
      ["data:", "missing comma before data"],
      ["data:abc", "missing media type slash"],
      ["data:,a b", "invalid data character"],
      ["data:,%zz", "rfc2396: invalid char 0x25 in unescape sequence"],
      ["data:;base64,aGk", "illegal base64 data at input byte 0"],
      ["DATA:,x", "missing data prefix"],
    ];
    for (const [url, message] of cases)
      assert.throws(
        () => decodeDataUrl(url),
        (e: unknown) => e instanceof DataUrlError && e.message === message,
        url,
      );
  });

  it("round-trips any bytes through the encoder", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        assert.deepEqual(new Uint8Array(decodeDataUrl(encodeDataUrl(bytes)).data), bytes);
      }),
      { numRuns: 500 },
    );
  });
});
