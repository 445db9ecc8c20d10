/**
 * Certificate requests as openssl makes them (the fixtures below), read back: the subject's common
 * names and organizations, and whether alternative names are asked for.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { csrSubject } from "./csr-subject";

// openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/O=system:nodes/CN=system:node:win-1"
const NODE = `-----BEGIN CERTIFICATE REQUEST-----
MIHuMIGVAgEAMDMxFTATBgNVBAoMDHN5c3RlbTpub2RlczEaMBgGA1UEAwwRc3lz
dGVtOm5vZGU6d2luLTEwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARYVa6O9/nj
+Fkd+tHU/SQ9Y6NQVZOgeMZLstqpGA03EC9a+cwNn95x40Yo4IKRUzuWNE2SR5j5
Jff3Xc4VA21loAAwCgYIKoZIzj0EAwIDSAAwRQIhAPLChYVPbOHMEjMVDDg+uAhe
+4v/pnwO+XlZgm8VTJp7AiArg+lL/MizX6KrUUmVZ/khNOqiUjWfZuVLTiEWQjJi
3A==
-----END CERTIFICATE REQUEST-----`;
// The same for win-2, with -addext "subjectAltName=DNS:evil".
const WITH_SAN = `-----BEGIN CERTIFICATE REQUEST-----
MIIBEDCBtwIBADAzMRUwEwYDVQQKDAxzeXN0ZW06bm9kZXMxGjAYBgNVBAMMEXN5
c3RlbTpub2RlOndpbi0yMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEfhUghDRy
gzTcX6i6y9RVsOAdw5VID+Ge/vuNaeZ6TqFcoYrQSIPX8h7b2hVRw0+gI9KRP0WA
e/i0kVPpzmvWUaAiMCAGCSqGSIb3DQEJDjETMBEwDwYDVR0RBAgwBoIEZXZpbDAK
BggqhkjOPQQDAgNIADBFAiBaWJnhfMs7c7E/v0nAM6q0ZjEPHFSWWN9HtQzJIghV
KQIhAOJ3Jq7nLRiHIW9NwIQ+EZPdoUvLz4KsE1/j87eP1QYE
-----END CERTIFICATE REQUEST-----`;

describe("reading a certificate request", () => {
  it("finds the node's name and group", () => {
    assert.deepEqual(csrSubject(NODE), {
      commonNames: ["system:node:win-1"],
      organizations: ["system:nodes"],
      alternativeNames: false,
    });
  });

  it("sees alternative names asked for", () => {
    const s = csrSubject(WITH_SAN);
    assert.deepEqual(s.commonNames, ["system:node:win-2"]);
    assert.equal(s.alternativeNames, true);
  });

  it("refuses what is not a request, or is cut short", () => {
    assert.throws(() => csrSubject("hello"), /not a PEM certificate request/);
    const lines = NODE.split("\n");
    const cut = [lines[0], lines[1], lines[lines.length - 1]].join("\n");
    assert.throws(() => csrSubject(cut), /truncated|length|not a certification request|no subject/);
  });
});
