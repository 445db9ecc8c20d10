import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { loopbackPeerUid } from "./loopback-peer";

// Both ends of one connection 127.0.0.1:40000 -> 127.0.0.1:8080 as /proc/net/tcp lists them.
const table = [
  "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0",
  "   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1",
  "   2: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 3 1 0 20 4 30 10 -1",
];

describe("the uid at the other end of a loopback connection", () => {
  it("is the uid of the client's end, found by its addresses", () => {
    const socket = { localAddress: "127.0.0.1", localPort: 8080, remoteAddress: "127.0.0.1", remotePort: 40000 };
    assert.equal(
      loopbackPeerUid(socket, () => table),
      65534,
    );
    assert.equal(
      loopbackPeerUid({ ...socket, remoteAddress: "::ffff:127.0.0.1" }, () => table),
      65534,
    );
  });

  it("is unknown when the kernel lists no such connection", () => {
    const socket = { localAddress: "127.0.0.1", localPort: 8080, remoteAddress: "127.0.0.1", remotePort: 40001 };
    assert.equal(
      loopbackPeerUid(socket, () => table),
      undefined,
    );
    assert.equal(
      loopbackPeerUid({ ...socket, remoteAddress: undefined }, () => table),
      undefined,
    );
  });
});
