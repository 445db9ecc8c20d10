/**
 * wins's list arguments (`--args "a 'b c'"`): one string split on spaces except
 * inside single or double quotes; the quote characters stay in the item (they
 * only toggle state), exactly as wins's flags.ListValue did, so existing command
 * lines mean the same thing.
 */
export function parseListValue(value: string): string[] {
  const items: string[] = [];
  let current = "";
  let quote: string | undefined;
  for (const c of value) {
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      current += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      current += c;
    } else if (c === " ") {
      if (current !== "") items.push(current);
      current = "";
    } else {
      current += c;
    }
  }
  if (quote !== undefined) throw new Error("malformed ListValue contains an unpaired escaped quote");
  if (current !== "") items.push(current);
  return items;
}

/** A protocol and port range: `TCP:443`, `UDP:4789-4790`. */
export interface PortSpec {
  readonly protocol: "TCP" | "UDP";
  readonly ports: readonly number[];
}

/** Parses `PROTO:PORT` or `PROTO:LOW-HIGH`; `protocols` limits the accepted protocols. */
export function parsePortSpec(item: string, protocols: readonly ("TCP" | "UDP")[] = ["TCP", "UDP"]): PortSpec {
  const m = /^([A-Za-z]+):(\d+)(?:-(\d+))?$/.exec(item);
  if (!m) throw new Error(`${JSON.stringify(item)} is not PROTOCOL:PORT or PROTOCOL:LOW-HIGH`);
  const protocol = (m[1] ?? "").toUpperCase();
  if (!(protocols as readonly string[]).includes(protocol))
    throw new Error(`${JSON.stringify(item)}: protocol must be ${protocols.join(" or ")}`);
  const low = Number(m[2]);
  const high = m[3] === undefined ? low : Number(m[3]);
  if (low < 1 || high > 65_535) throw new Error(`${JSON.stringify(item)}: ports must be 1-65535`);
  if (m[3] !== undefined && low >= high)
    throw new Error(`${JSON.stringify(item)}: the low port must be below the high port`);
  return { protocol: protocol as "TCP" | "UDP", ports: Array.from({ length: high - low + 1 }, (_, i) => low + i) };
}
