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
// Unreserved and reserved URI characters, minus those RFC 2396 calls "unwise".
const URL_CHAR = /^[A-Za-z0-9\-_.!~*'();/?:@&=+$,]$/;
const BASE64_BODY = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Parses and decodes `url`; throws {@link DataUrlError} when it is not a valid data URL. */
export function decodeDataUrl(url: string): DataUrl {
  if (!url.startsWith("data:")) throw new DataUrlError("missing data prefix");
  const comma = url.indexOf(",", 5);
  if (comma < 0) {
    // Go's lexer reads the media type before it looks for the comma.
    const head = url.slice(5);
    throw new DataUrlError(head !== "" && !head.startsWith(";") && !head.includes("/") ? "missing media type slash" : "missing comma before data");
  }
  const header = url.slice(5, comma);
  const body = url.slice(comma + 1);
  const params = header.split(";");
  const type = params.shift() ?? "";
  let base64 = false;
  if (type !== "") {
    const slash = type.indexOf("/");
    if (slash < 0) throw new DataUrlError(/[,;]/.test(type) ? "invalid character for media type" : "missing media type slash");
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
    const c = body[i] ?? "";
    if (c === "%" && !base64) {
      if (!/^[0-9A-Fa-f]{2}$/.test(body.slice(i + 1, i + 3))) {
        throw new DataUrlError("rfc2396: invalid char 0x25 in unescape sequence");
      }
      i += 2;
      continue;
    }
    if (!URL_CHAR.test(c)) throw new DataUrlError("invalid data character");
  }
  let data: Buffer;
  if (base64) {
    if (!BASE64_BODY.test(body)) throw new DataUrlError(`illegal base64 data at input byte ${firstBadBase64Byte(body)}`);
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
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "%") {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(text.charCodeAt(i));
    }
  }
  return Buffer.from(bytes);
}

// Go's decoder reports the start of the first 4-byte quantum it cannot decode.
function firstBadBase64Byte(body: string): number {
  for (let q = 0; q < body.length; q += 4) {
    const quantum = body.slice(q, q + 4);
    const last = q + 4 >= body.length;
    if (!/^[A-Za-z0-9+/]{4}$/.test(quantum) && !(last && /^[A-Za-z0-9+/]{2,3}={1,2}$/.test(quantum) && quantum.length === 4)) {
      return q;
    }
  }
  return body.length;
}
