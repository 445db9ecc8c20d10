import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { printable } from "./printable";

describe("printable", () => {
  it("shows terminal escapes, bidi marks and line breaks as visible escapes", () => {
    const osc52 = "\u001b]52;c;ZWNobyBwd25lZA==\u0007\u001b[2Jarchive OK\r\n\u202eevil";
    const out = printable(osc52);
    assert.equal(out, "\\u001b]52;c;ZWNobyBwd25lZA==\\u0007\\u001b[2Jarchive OK\\u000d\\u000a\\u202eevil");
    // eslint-disable-next-line no-control-regex -- control characters are what is looked for
    assert.doesNotMatch(out, /[\u0000-\u001f\u007f-\u009f\u202e]/);
  });

  it("keeps ordinary text and tabs, and bounds the length", () => {
    assert.equal(printable("warning:\tdisk ü 日本"), "warning:\tdisk ü 日本");
    assert.equal(printable("x".repeat(10), 4), "xxxx…");
  });
});
