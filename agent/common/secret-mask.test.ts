/**
 * Masking follows the secret: fast-check generates secrets (any length from one
 * character, any alphabet) and command output holding them in every form a
 * command prints — as they are, JSON-escaped, base64 (standard and URL-safe) and
 * hex on their own or inside a longer encoded document at any offset, and
 * URL-encoded — and key material nobody named; the masked output must hold none
 * of them, by the checks an attacker reading it would run.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { describe, it } from "node:test";
import fc from "fast-check";
import { MASK, maskBuffer, secretMasker } from "./secret-mask";

/** Every maximal run of base64 characters in `text`, decoded from each of its four alignments. */
function base64Decodings(text: string): Buffer[] {
  const out: Buffer[] = [];
  for (const run of text.match(/[A-Za-z0-9+/_-]+/g) ?? []) {
    for (let i = 0; i < 4; i++) {
      out.push(Buffer.from(run.slice(i), "base64"), Buffer.from(run.slice(i), "base64url"));
    }
  }
  return out;
}

function hexDecodings(text: string): Buffer[] {
  return (text.match(/[0-9A-Fa-f]+/g) ?? []).flatMap((run) => [
    Buffer.from(run.slice(0, run.length - (run.length % 2)), "hex"),
    Buffer.from(run.slice(1, run.length - ((run.length - 1) % 2)), "hex"),
  ]);
}

/** Whether `text` still gives `secret` away, to a reader who decodes what looks encoded. */
function leaks(masked: string, secret: string): string | undefined {
  // The mask says nothing, even when a secret is made of its characters.
  const text = masked.split(MASK).join("\u0000");
  const bytes = Buffer.from(secret, "utf8");
  if (text.includes(secret)) return "as it is";
  if (text.includes(JSON.stringify(secret).slice(1, -1))) return "JSON-escaped";
  if (base64Decodings(text).some((d) => d.includes(bytes))) return "in base64";
  if (hexDecodings(text).some((d) => d.includes(bytes))) return "in hex";
  for (const run of text.match(/[^\s"'<>]*%[0-9A-Fa-f]{2}[^\s"'<>]*/g) ?? []) {
    try {
      if (decodeURIComponent(run).includes(secret) || decodeURIComponent(run.replace(/\+/g, " ")).includes(secret))
        return "URL-encoded";
    } catch {
      // not decodable: not a URL-encoded form
    }
  }
  return undefined;
}

const alphabets = [
  "abcdefghijklmnopqrstuvwxyz0123456789",
  "ABCDEFabcdef0123456789.-_",
  "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ ",
  "äöüßéñ日本語🔑",
];
const secretArb = fc
  .constantFrom(...alphabets)
  .chain((a) => fc.string({ unit: fc.constantFrom(...[...a]), minLength: 1, maxLength: 40 }))
  .filter((s) => s.trim().length > 0);
const fillerArb = fc.string({ unit: fc.constantFrom(..."abcxyz019 =:\n"), maxLength: 30 });

type Form = (secret: string, before: string, after: string) => string;
const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const forms: Record<string, Form> = {
  plain: (s, b, a) => `${b}${s}${a}`,
  json: (s) => JSON.stringify({ value: s }),
  base64: (s) => `value: ${b64(s)}`,
  base64url: (s) => `value: ${Buffer.from(s, "utf8").toString("base64url")}`,
  "base64 of a document holding it": (s, b, a) => `data:\n  config: ${b64(`${b}${s}${a}`)}\n`,
  "base64url of a document holding it": (s, b, a) => `x=${Buffer.from(`${b}${s}${a}`).toString("base64url")};`,
  "base64 of JSON holding it": (s, b) => `blob ${b64(JSON.stringify({ b, s }))} end`,
  hex: (s) => `key ${Buffer.from(s, "utf8").toString("hex")}`,
  HEX: (s) => `KEY=${Buffer.from(s, "utf8").toString("hex").toUpperCase()}`,
  "hex of a document holding it": (s, b, a) => `dump ${Buffer.from(`${b}${s}${a}`).toString("hex")}`,
  "URL-encoded": (s) => `https://example.test/join?token=${encodeURIComponent(s)}&x=1`,
  "form-encoded": (s) => `body: user=x&pass=${encodeURIComponent(s).replace(/%20/g, "+")}`,
  "a Secret manifest": (s) =>
    `apiVersion: v1\nkind: Secret\ndata:\n  password: ${b64(s)}\n  other: ${b64("harmless")}\n`,
};

describe("masking follows the secret (fast-check)", () => {
  it("leaves no generated secret in any form in the output", () => {
    fc.assert(
      fc.property(
        fc.array(secretArb, { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(fc.constantFrom(...Object.keys(forms)), fillerArb, fillerArb), {
          minLength: 1,
          maxLength: 6,
        }),
        (secrets, uses) => {
          const lines = uses.map(([form, before, after], i) =>
            (forms[form] as Form)(secrets[i % secrets.length] as string, before, after),
          );
          const output = `step output\n${lines.join("\n")}\ndone\n`;
          const masked = secretMasker(secrets)(output);
          for (const s of secrets) {
            const how = leaks(masked, s);
            assert.equal(how, undefined, `${JSON.stringify(s)} leaks ${how} in ${JSON.stringify(masked)}`);
          }
        },
      ),
      {
        numRuns: Number(process.env.WINFLEET_PROPERTY_RUNS ?? 1500),
        seed: Number(process.env.WINFLEET_PROPERTY_SEED ?? 41),
      },
    );
  });

  it("masks the same in UTF-16 output, as PowerShell and the event log write it", () => {
    fc.assert(
      fc.property(secretArb, fillerArb, (secret, filler) => {
        const data = Buffer.from(`\ufeff${filler}${secret} and ${b64(secret)}\r\n`, "utf16le");
        const masked = maskBuffer(data, [secret]).toString("utf16le");
        assert.equal(leaks(masked, secret), undefined, JSON.stringify(masked));
      }),
      { numRuns: 300, seed: 42 },
    );
  });
});

describe("key material nobody named a secret", () => {
  const keys = [
    generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ type: "sec1", format: "pem" }),
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }),
    generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ type: "pkcs1", format: "pem" }),
  ].map(String);
  const body = (pem: string) => pem.split("\n").filter((l) => l && !l.startsWith("-----"));

  it("masks PEM private keys, whole or cut off at either end", () => {
    const mask = secretMasker([]);
    for (const pem of keys) {
      const lines = pem.trimEnd().split("\n");
      for (const text of [
        `before\n${pem}after\n`,
        `${lines.slice(0, 3).join("\n")}`, // a tail cut after the start
        `${lines.slice(2).join("\n")}\nlater`, // a tail that begins in the middle
      ]) {
        const out = mask(text);
        for (const l of body(pem)) assert.ok(!out.includes(l), `a key line survives in ${out}`);
      }
    }
  });

  it("masks kubeconfig and HTTP credentials, and base64 that decodes to a private key", () => {
    const mask = secretMasker([]);
    const pem = keys[0] as string;
    const kubeconfig = [
      "users:",
      "- name: admin",
      "  user:",
      "    client-certificate-data: Y2VydA==",
      `    client-key-data: ${b64(pem)}`,
      "    token: eyJhbGciOiJSUzI1NiJ9.payload.signature",
    ].join("\n");
    const out = mask(kubeconfig);
    assert.ok(!out.includes(b64(pem).slice(0, 40)));
    assert.ok(!out.includes("eyJhbGciOiJSUzI1NiJ9"));
    assert.match(out, /client-certificate-data: Y2VydA==/, "a certificate is not secret");
    assert.equal(mask(`"client-key-data": "${b64(pem)}"`), `"client-key-data": "${MASK}"`);
    assert.equal(mask(`tls.key: ${b64(pem)}`), `tls.key: ${MASK}`);
    assert.equal(mask("Authorization: Bearer abcdefghijklmnop"), `Authorization: Bearer ${MASK}`);
    assert.equal(mask("joined with abcdef.0123456789abcdef"), `joined with ${MASK}`);
  });

  it("leaves output without secrets as it is", () => {
    const text = "installing kubelet 1.34.7 to C:\\k\\kubelet.exe (sha256 3f0a…)\nwrote /etc/kubernetes/pki/ca.crt\n";
    assert.equal(secretMasker(["hunter2-long-password"])(text), text);
  });
});
