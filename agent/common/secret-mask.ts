/**
 * Masking that follows the secret. A value the agent knows to be secret is
 * hidden wherever it shows, however short, and however a command printed it:
 * as it is, JSON-escaped, and inside any base64 (standard or URL-safe), hex or
 * URL-encoded text that decodes to something holding it — a Secret manifest's
 * `data`, `kubectl config view --raw`, a URL's query. Encoded text is matched
 * by decoding it, not by encoding the secret, so a value at any offset inside a
 * longer encoded text is found too, and the whole encoded run is masked.
 *
 * Key material is masked whether or not anyone named it a secret: PEM private
 * key blocks (whole, or cut off at either end, as a log tail cuts them), base64
 * that decodes to one, and the values of the credential fields of kubeconfigs
 * and HTTP (`client-key-data`, `token`, `password`, `Authorization: Bearer`),
 * and Kubernetes bootstrap tokens (`abcdef.0123456789abcdef`).
 *
 * A secret of one or two bytes is found inside much encoded text by chance,
 * which is then masked too: masking too much is the lesser harm.
 */
import { isUtf8 } from "node:buffer";

/** What a masked value is replaced by in step output, logs, the journal, Events and status. */
export const MASK = "***";

const PEM_BLOCK =
  /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----(?:[\s\S]*?-----END \1PRIVATE KEY-----|[A-Za-z0-9+/=\s:,-]*)/g;
/** The end of a block whose start was cut off: the base64 lines before an END line. */
const PEM_TAIL = /(?:[A-Za-z0-9+/=]+\r?\n)*[A-Za-z0-9+/=]*-----END ((?:[A-Z0-9]+ )*)PRIVATE KEY-----/g;
const CREDENTIAL_FIELD =
  /(["']?\b(?:client-key-data|token|id-token|refresh-token|password|client-secret)["']?\s*[:=]\s*)(["']?)([^\s"',}]+)\2/gi;
const BEARER = /(\b(?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=-]{8,}/g;
const BOOTSTRAP_TOKEN = /\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g;
const BASE64_RUN = /[A-Za-z0-9+/_-]+={0,2}/g;
const HEX_RUN = /[0-9A-Fa-f]{2,}/g;
const URL_RUN =
  /(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*%[0-9A-Fa-f]{2}(?:[A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*/g;
const PEM_PRIVATE = /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/;

/** The whole-value forms of `secret` matched as they are: itself and JSON-escaped. */
export function literalForms(secret: string): string[] {
  return [...new Set([secret, JSON.stringify(secret).slice(1, -1)])].filter((f) => f.length > 0);
}

function decodedHolds(decoded: Buffer, needles: readonly Buffer[]): boolean {
  if (decoded.length === 0) return false;
  if (needles.some((n) => decoded.includes(n))) return true;
  // Key material however it was named (a Secret's tls.key, a kubeconfig's client-key-data).
  return PEM_PRIVATE.test(decoded.toString("latin1"));
}

// Base64 is decoded from each of its four possible starting points: a run found in text may begin
// before the encoded value does (a word glued to it), and only one alignment decodes it.
function base64Holds(run: string, needles: readonly Buffer[]): boolean {
  const body = run.replace(/=+$/, "");
  for (let start = 0; start < 4 && body.length - start >= 2; start++) {
    const part = body.slice(start);
    const usable = part.slice(0, part.length - (part.length % 4 === 1 ? 1 : 0));
    if (decodedHolds(Buffer.from(usable, /[-_]/.test(usable) ? "base64url" : "base64"), needles)) return true;
  }
  return false;
}

function hexHolds(run: string, needles: readonly Buffer[]): boolean {
  for (let start = 0; start < 2 && run.length - start >= 2; start++) {
    const part = run.slice(start, run.length - ((run.length - start) % 2));
    if (decodedHolds(Buffer.from(part, "hex"), needles)) return true;
  }
  return false;
}

function urlHolds(run: string, secrets: readonly string[]): boolean {
  let decoded: string;
  try {
    decoded = decodeURIComponent(run.replace(/\+/g, " "));
  } catch {
    decoded = run.replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  }
  let raw: string;
  try {
    raw = decodeURIComponent(run);
  } catch {
    raw = decoded;
  }
  return secrets.some((s) => decoded.includes(s) || raw.includes(s));
}

/**
 * A function that masks `secrets` (and key material, known or not) in text with `replacement`.
 * Empty values are ignored; every other value is masked however short.
 */
export function secretMasker(secrets: readonly string[], replacement = MASK): (text: string) => string {
  const values = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  const literals = [...new Set(values.flatMap(literalForms))].sort((a, b) => b.length - a.length);
  // Encoded text may hold a value as it is or JSON-escaped (a manifest encodes the JSON it holds).
  const needles = literals.map((l) => Buffer.from(l, "utf8"));
  return (text) => {
    let out = text;
    for (const l of literals) if (out.includes(l)) out = out.split(l).join(replacement);
    out = out
      .replace(PEM_BLOCK, (_m, kind: string) => `-----BEGIN ${kind}PRIVATE KEY-----${replacement}`)
      .replace(PEM_TAIL, (_m, kind: string) => `${replacement}-----END ${kind}PRIVATE KEY-----`)
      .replace(CREDENTIAL_FIELD, (_m, key: string, quote: string) => `${key}${quote}${replacement}${quote}`)
      .replace(BEARER, (_m, scheme: string) => `${scheme}${replacement}`)
      .replace(BOOTSTRAP_TOKEN, replacement);
    // Masking one run splits the runs around it, which then decode anew: until nothing changes.
    for (let previous = ""; previous !== out;) {
      previous = out;
      out = out.replace(BASE64_RUN, (run) => (base64Holds(run, needles) ? replacement : run));
      if (values.length > 0) {
        out = out.replace(HEX_RUN, (run) => (hexHolds(run, needles) ? replacement : run));
        out = out.replace(URL_RUN, (run) => (urlHolds(run, literals) ? replacement : run));
      }
    }
    return out;
  };
}

function replaceBytes(data: Buffer, needle: Buffer, by: Buffer): Buffer {
  let at = data.indexOf(needle);
  if (at < 0) return data;
  const parts: Buffer[] = [];
  let from = 0;
  while (at >= 0) {
    parts.push(data.subarray(from, at), by);
    from = at + needle.length;
    at = data.indexOf(needle, from);
  }
  parts.push(data.subarray(from));
  return Buffer.concat(parts);
}

/** Whether `data` reads as UTF-16LE text: a byte-order mark, or a zero high byte in most of its characters. */
function looksUtf16(data: Buffer): boolean {
  if (data.length >= 2 && data[0] === 0xff && data[1] === 0xfe) return true;
  if (data.length < 4 || data.length % 2 !== 0) return false;
  let zeros = 0;
  const sample = Math.min(data.length, 4096);
  for (let i = 1; i < sample; i += 2) if (data[i] === 0) zeros++;
  return zeros > sample / 2 / 2;
}

/**
 * `data` masked as {@link secretMasker} masks text: UTF-8 text and UTF-16LE text (PowerShell's and
 * the event log's) as text; anything else byte by byte, each value's literal forms in both encodings.
 */
export function maskBuffer(data: Buffer, secrets: readonly string[], replacement = MASK): Buffer {
  const mask = secretMasker(secrets, replacement);
  if (isUtf8(data)) {
    const text = data.toString("utf8");
    const masked = mask(text);
    return masked === text ? data : Buffer.from(masked, "utf8");
  }
  if (looksUtf16(data)) return Buffer.from(mask(data.toString("utf16le")), "utf16le");
  let out = data;
  for (const form of [...new Set(secrets.filter((s) => s.length > 0).flatMap(literalForms))]) {
    out = replaceBytes(out, Buffer.from(form, "utf8"), Buffer.from(replacement, "utf8"));
    out = replaceBytes(out, Buffer.from(form, "utf16le"), Buffer.from(replacement, "utf16le"));
  }
  return out;
}
