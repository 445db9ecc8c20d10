/**
 * RFC 2397 `data:` URLs, decoded with the same strictness as CoreOS Ignition's
 * decoder (vincent-petithory/dataurl): the characters allowed in the data part, the
 * media type grammar and standard padded base64 all match what `ignition-validate`
 * accepts, so a config this module accepts is one Ignition accepts.
 */

/** A decoded data URL. */
export interface DataUrl {
  readonly mediaType: string;
  readonly base64: boolean;
  readonly data: Buffer;
}

/** Thrown for a malformed data URL; the message follows Ignition's wording. */
export class DataUrlError extends Error {}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Lookup tables rather than regular expressions: data URLs run to hundreds of
// megabytes, where a backtracking regex overflows the stack.
const table = (chars: string): Uint8Array => {
  const t = new Uint8Array(128);
  for (const c of chars) t[c.charCodeAt(0)] = 1;
  return t;
};
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/** Unreserved and reserved URI characters, minus those RFC 2396 calls "unwise". */
const URL_CHAR = table(`${ALNUM}-_.!~*'();/?:@&=+$,`);
const B64_CHAR = table(`${ALNUM}+/`);
const HEX = table("0123456789ABCDEFabcdef");
const isIn = (t: Uint8Array, code: number): boolean => code < 128 && t[code] === 1;

/** Parses and decodes `url`; throws {@link DataUrlError} when it is not a valid data URL. */
export function decodeDataUrl(url: string): DataUrl {
  if (!url.startsWith("data:")) throw new DataUrlError("missing data prefix");
  const comma = url.indexOf(",", 5);
  if (comma < 0) {
    // Go's lexer reads the media type before it looks for the comma.
    const head = url.slice(5);
    throw new DataUrlError(
      head !== "" && !head.startsWith(";") && !head.includes("/")
        ? "missing media type slash"
        : "missing comma before data",
    );
  }
  const header = url.slice(5, comma);
  const body = url.slice(comma + 1);
  const params = header.split(";");
  const type = params.shift() ?? "";
  let base64 = false;
  if (type !== "") {
    const slash = type.indexOf("/");
    if (slash < 0)
      throw new DataUrlError(/[,;]/.test(type) ? "invalid character for media type" : "missing media type slash");
    if (!TOKEN.test(type.slice(0, slash)) || !TOKEN.test(type.slice(slash + 1))) {
      throw new DataUrlError("invalid character for media type");
    }
  }
  params.forEach((p, i) => {
    if (p === "base64" && i === params.length - 1) {
      base64 = true;
      return;
    }
    const eq = p.indexOf("=");
    if (eq <= 0 || !TOKEN.test(p.slice(0, eq)) || !TOKEN.test(p.slice(eq + 1))) {
      throw new DataUrlError("invalid character for media type parameter");
    }
  });
  for (let i = 0; i < body.length; i++) {
    const code = body.charCodeAt(i);
    if (code === 0x25 && !base64) {
      if (!isIn(HEX, body.charCodeAt(i + 1)) || !isIn(HEX, body.charCodeAt(i + 2))) {
        throw new DataUrlError("rfc2396: invalid char 0x25 in unescape sequence");
      }
      i += 2;
      continue;
    }
    if (!isIn(URL_CHAR, code)) throw new DataUrlError("invalid data character");
  }
  let data: Buffer;
  if (base64) {
    const bad = firstBadBase64Byte(body);
    if (bad >= 0) throw new DataUrlError(`illegal base64 data at input byte ${bad}`);
    data = Buffer.from(body, "base64");
  } else {
    data = percentDecode(body);
  }
  return { mediaType: type === "" ? "text/plain" : type, base64, data };
}

/** Encodes bytes as the shortest of Ignition's two data URL forms (as Butane does). */
export function encodeDataUrl(data: Uint8Array): string {
  const b64 = `data:;base64,${Buffer.from(data).toString("base64")}`;
  const pct = `data:,${percentEncode(data)}`;
  return pct.length <= b64.length ? pct : b64;
}

/** Percent-encodes every byte outside the unreserved set. */
export function percentEncode(data: Uint8Array): string {
  let out = "";
  for (const byte of data) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function percentDecode(text: string): Buffer {
  const out = Buffer.allocUnsafe(text.length);
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x25) {
      out[n++] = parseInt(text.slice(i + 1, i + 3), 16);
      i += 2;
    } else {
      out[n++] = code;
    }
  }
  return out.subarray(0, n);
}

// Standard padded base64, as Go's StdEncoding reads it; returns the offset of the
// first 4-byte quantum it cannot decode (Go's error position), or -1.
function firstBadBase64Byte(body: string): number {
  if (body.length % 4 !== 0) {
    // Go reports the last, incomplete quantum unless an earlier one is bad.
    const early = firstBadBase64Byte(body.slice(0, body.length - (body.length % 4)));
    return early >= 0 ? early : body.length - (body.length % 4);
  }
  for (let q = 0; q < body.length; q += 4) {
    const last = q + 4 === body.length;
    const pad = last ? (body.endsWith("==") ? 2 : body.endsWith("=") ? 1 : 0) : 0;
    for (let i = q; i < q + 4 - pad; i++) if (!isIn(B64_CHAR, body.charCodeAt(i))) return q;
  }
  return -1;
}
