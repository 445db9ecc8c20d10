/**
 * Reads JSON, optionally repairing the one defect the 2019 content has: missing
 * commas between members (`}` newline `"uninstall": …`). The repair is explicit
 * (lenient mode only) and reports each comma it inserted with its line.
 */

/** A repair made while reading. */
export interface Repair {
  readonly line: number;
  readonly message: string;
}

const TOKEN = /\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|[{}[\]:,])/y;

/**
 * Inserts the commas a member or element list is missing. Returns the repaired
 * text and the repairs; text it cannot tokenise is returned unchanged (JSON.parse
 * then reports it).
 */
export function repairMissingCommas(text: string): { text: string; repairs: Repair[] } {
  const repairs: Repair[] = [];
  const inserts: number[] = [];
  const stack: string[] = [];
  let afterValue = false;
  let expectKey = false;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(text); m !== null; m = TOKEN.exec(text)) {
    const tok = m[1] ?? "";
    const start = TOKEN.lastIndex - tok.length;
    const startsValue = tok === "{" || tok === "[" || !"}]:,".includes(tok);
    if (afterValue && startsValue && stack.length > 0) {
      inserts.push(start);
      const line = text.slice(0, start).split("\n").length;
      repairs.push({
        line,
        message: `inserted a missing comma before ${tok.length > 30 ? `${tok.slice(0, 30)}…` : tok} on line ${line}`,
      });
      afterValue = false;
      expectKey = stack.at(-1) === "{";
    }
    if (tok === "{" || tok === "[") {
      stack.push(tok);
      afterValue = false;
      expectKey = tok === "{";
    } else if (tok === "}" || tok === "]") {
      stack.pop();
      afterValue = true;
    } else if (tok === ":") {
      afterValue = false;
      expectKey = false;
    } else if (tok === ",") {
      afterValue = false;
      expectKey = stack.at(-1) === "{";
    } else if (expectKey) {
      expectKey = false; // a key is not a value
    } else {
      afterValue = true;
    }
  }
  let out = text;
  for (const at of inserts.reverse()) out = `${out.slice(0, at)},${out.slice(at)}`;
  return { text: out, repairs };
}
