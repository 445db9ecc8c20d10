/**
 * Whether text gives a secret away to a reader who decodes what looks encoded:
 * the check the masking tests run on everything the agent keeps or shows.
 */

/** What a masked value is replaced by, in the agent's output and in diagnose archives. */
const MASKS = ["***", "[secret]"];

function decodings(text: string): Buffer[] {
  const out: Buffer[] = [];
  for (const run of text.match(/[A-Za-z0-9+/_-]+/g) ?? [])
    for (let i = 0; i < 4; i++) out.push(Buffer.from(run.slice(i), "base64"), Buffer.from(run.slice(i), "base64url"));
  for (const run of text.match(/[0-9A-Fa-f]+/g) ?? [])
    for (let i = 0; i < 2; i++) out.push(Buffer.from(run.slice(i, run.length - ((run.length - i) % 2)), "hex"));
  return out;
}

/** How `text` shows `secret` (as it is, JSON-escaped, in base64, hex or URL encoding), or undefined. */
export function leakOf(text: string, secret: string): string | undefined {
  let t = text;
  for (const m of MASKS) t = t.split(m).join("\u0000");
  if (t.includes(secret)) return "as it is";
  if (t.includes(JSON.stringify(secret).slice(1, -1))) return "JSON-escaped";
  if (decodings(t).some((d) => d.includes(Buffer.from(secret)))) return "encoded (base64 or hex)";
  for (const run of t.match(/[^\s"'<>]*%[0-9A-Fa-f]{2}[^\s"'<>]*/g) ?? []) {
    try {
      if (decodeURIComponent(run.replace(/\+/g, " ")).includes(secret)) return "URL-encoded";
    } catch {
      // not URL-encoded text
    }
  }
  return undefined;
}
