/**
 * What a PKCS#10 certificate request asks for, read from its DER: the subject's
 * common names and organizations, and whether it asks for subject alternative
 * names. Enough to check a node client CSR as Kubernetes' own approver does
 * (`O=system:nodes`, `CN=system:node:<name>`, no SANs), without a library: the
 * structure is fixed and every length is checked against what holds it.
 */

/** The parts of a request an approver judges. */
export interface CsrSubject {
  readonly commonNames: readonly string[];
  readonly organizations: readonly string[];
  /** The request carries a subject alternative name extension (a node client certificate has none). */
  readonly alternativeNames: boolean;
}

interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly end: number;
}

function tlv(der: Buffer, at: number, within: number): Tlv {
  if (at + 2 > within) throw new Error("truncated");
  const tag = der[at] as number;
  let len = der[at + 1] as number;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || start + n > within) throw new Error("bad length");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (der[start + i] as number);
    start += n;
  }
  const end = start + len;
  if (end > within) throw new Error("length past its container");
  return { tag, start, end };
}

function children(der: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end;) {
    const c = tlv(der, at, parent.end);
    out.push(c);
    at = c.end;
  }
  return out;
}

function oid(der: Buffer, t: Tlv): string {
  const b = der.subarray(t.start, t.end);
  if (b.length === 0) return "";
  const parts = [Math.floor((b[0] as number) / 40), (b[0] as number) % 40];
  let v = 0;
  for (const x of b.subarray(1)) {
    v = v * 128 + (x & 0x7f);
    if ((x & 0x80) === 0) {
      parts.push(v);
      v = 0;
    }
  }
  return parts.join(".");
}

const CN = "2.5.4.3";
const O = "2.5.4.10";
const EXTENSION_REQUEST = "1.2.840.113549.1.9.14";
const SUBJECT_ALT_NAME = "2.5.29.17";

/** Reads a PEM `CERTIFICATE REQUEST`; throws an Error saying what is wrong with it. */
export function csrSubject(pem: string): CsrSubject {
  const m = /-----BEGIN (?:NEW )?CERTIFICATE REQUEST-----([\s\S]+?)-----END (?:NEW )?CERTIFICATE REQUEST-----/.exec(
    pem,
  );
  if (!m?.[1]) throw new Error("not a PEM certificate request");
  const der = Buffer.from(m[1].replace(/\s+/g, ""), "base64");
  const outer = tlv(der, 0, der.length);
  const info = children(der, outer)[0];
  if (outer.tag !== 0x30 || info?.tag !== 0x30) throw new Error("not a certification request");
  const [, name, , attributes] = children(der, info);
  if (name?.tag !== 0x30) throw new Error("no subject");
  const commonNames: string[] = [];
  const organizations: string[] = [];
  for (const rdn of children(der, name)) {
    for (const atv of children(der, rdn)) {
      const [type, value] = children(der, atv);
      if (!type || !value) continue;
      const text = der.toString("utf8", value.start, value.end);
      if (oid(der, type) === CN) commonNames.push(text);
      if (oid(der, type) === O) organizations.push(text);
    }
  }
  let alternativeNames = false;
  if (attributes?.tag === 0xa0) {
    for (const attr of children(der, attributes)) {
      const [type, values] = children(der, attr);
      if (!type || !values || oid(der, type) !== EXTENSION_REQUEST) continue;
      for (const exts of children(der, values))
        for (const ext of children(der, exts)) {
          const [extId] = children(der, ext);
          if (extId && oid(der, extId) === SUBJECT_ALT_NAME) alternativeNames = true;
        }
    }
  }
  return { commonNames, organizations, alternativeNames };
}
