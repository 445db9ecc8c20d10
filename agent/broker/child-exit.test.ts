/**
 * The exit code a wins client sees, from what Node reports for a host program:
 * POSIX codes and signals as a shell reports them, and Windows' 32-bit exit
 * codes carried in the protocol's int32 as the same bits. The codes a real
 * program returns run through the broker in test/broker (Linux) and
 * test/wine/broker.test.ts (Windows' Node).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { exitCodeOf } from "./child-exit";
import { ProcessWaitResponseSchema } from "./generated/wins/process_pb";

/** The exit code as the Wait stream's last message carries it, encoded and decoded by the generated codec. */
function onTheWire(code: number): number {
  const sent = create(ProcessWaitResponseSchema, { Options: { case: "ExitCode", value: code } });
  const got = fromBinary(ProcessWaitResponseSchema, toBinary(ProcessWaitResponseSchema, sent)).Options;
  assert.equal(got.case, "ExitCode");
  return got.value;
}

describe("exitCodeOf", () => {
  it("passes an exit code from 0 to 255 through, 0 included", () => {
    for (const code of [0, 1, 2, 3, 127, 255]) assert.equal(exitCodeOf(code, null), code);
  });

  it("passes a Windows exit code above 255 through (3010 asks for a reboot)", () => {
    for (const code of [256, 1641, 3010, 65_535, 0x7fffffff]) assert.equal(exitCodeOf(code, null), code);
  });

  it("gives a Windows exit code with the high bit set as the same 32 bits, signed", () => {
    // Node on Windows reports GetExitCodeProcess's DWORD unsigned.
    assert.equal(exitCodeOf(0xffffffff, null), -1, "ExitProcess(-1)");
    assert.equal(exitCodeOf(0xc0000005, null), -1073741819, "STATUS_ACCESS_VIOLATION");
    assert.equal(exitCodeOf(0xc000013a, null), -1073741510, "STATUS_CONTROL_C_EXIT");
    assert.equal(exitCodeOf(0x80000000, null), -2147483648);
    // A code already signed is left as it is.
    assert.equal(exitCodeOf(-1, null), -1);
    assert.equal(exitCodeOf(-1073741819, null), -1073741819);
  });

  it("gives a program killed by a signal 128 + the signal's number, as a POSIX shell does", () => {
    assert.equal(exitCodeOf(null, "SIGHUP"), 129);
    assert.equal(exitCodeOf(null, "SIGINT"), 130);
    assert.equal(exitCodeOf(null, "SIGKILL"), 137);
    assert.equal(exitCodeOf(null, "SIGTERM"), 143);
  });

  it("never reports success for a program that ended without an exit code", () => {
    assert.notEqual(exitCodeOf(null, null), 0);
  });

  it("gives every code a value the protocol's int32 carries, whose bits are the code Windows gave", () => {
    const dwords = [0, 1, 255, 256, 3010, 0x7fffffff, 0x80000000, 0xc0000005, 0xc000013a, 0xfffffffe, 0xffffffff];
    for (const dword of dwords) {
      const code = exitCodeOf(dword, null);
      // Encoding the unsigned value itself throws (invalid int32), which reached clients as INTERNAL.
      assert.equal(onTheWire(code), code, `0x${dword.toString(16)}`);
      assert.equal(code >>> 0, dword, `0x${dword.toString(16)} read back unsigned, as cli prc run exits with it`);
    }
  });
});
